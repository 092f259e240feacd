"""The parts of an incident the v1 API lists and edits besides the incident itself: its
timeline and windows (lists), its report's sections (read, partial edit with If-Match),
and the deletion of a draft. The routes are the incident viewset's (api/incidents.py);
the work is here, which keeps that module under the size limit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.base import acting_user
from api.catalogue import catalogue_delete_errors, validated
from api.conflicts import refused_when_in_use
from api.permissions import is_staff
from incidents import services
from incidents.models import Incident, IncidentReport

if TYPE_CHECKING:
    from rest_framework.viewsets import GenericViewSet

    _Host = GenericViewSet
else:
    _Host = object

SECTIONS = ("summary", "root_cause", "remediation", "impact_description")


class ReportSectionsSerializer(s.StrictSerializer):
    """The report's kind and sections (Markdown); send only what changes."""

    kind = serializers.ChoiceField(choices=IncidentReport.Kind.choices, required=False)
    summary = s.text(required=False, allow_blank=True)
    root_cause = s.text(required=False, allow_blank=True)
    remediation = s.text(required=False, allow_blank=True, help_text="Remediation and prevention.")
    impact_description = s.text(required=False, allow_blank=True, help_text="The impact in detail.")


class IncidentPartsMixin(_Host):
    """Mixed into the incident viewsets before their base."""

    def list_updates(self) -> Response:
        incident: Incident = self.get_object()  # prefetched newest first
        return Response(s.UpdateSerializer(incident.updates.all(), many=True).data)

    def list_windows(self) -> Response:
        incident: Incident = self.get_object()  # prefetched, public products only for non-staff
        return Response(s.WindowSerializer(incident.windows.all(), many=True).data)

    def _report(self) -> IncidentReport:
        incident: Incident = self.get_object()
        report = IncidentReport.objects.filter(incident=incident).first()
        if report is None or not (report.is_published or is_staff(self.request)):
            raise Http404("This incident has no report yet.")
        return report

    def report_sections(self, request: Request) -> Response:
        if request.method == "PATCH":
            incident: Incident = self.get_object()
            changes = validated(ReportSectionsSerializer, request.data, partial=True)
            current = IncidentReport.objects.filter(incident=incident).first()
            kept = {name: getattr(current, name) for name in ("kind", *SECTIONS)} if current else {}
            services.report_save(incident=incident, **{**kept, **changes}, actor=acting_user(request))
        return Response(s.ReportSerializer(self._report()).data)

    def current_representation(self) -> Any:
        # A PATCH of the report is checked against the report's own ETag (its GET's).
        if self.action == "report" and self.request.method == "PATCH":
            return s.ReportSerializer(self._report()).data
        return super().current_representation()  # type: ignore[misc]

    @extend_schema(
        summary="Delete a draft incident (staff)",
        description="Discards a draft (an incident not yet public, such as one filed from an "
        "alert) with its windows and timeline. A public incident answers 409: correct it instead. "
        "Send its `ETag` as `If-Match` to refuse the delete with 412 if it changed since.",
        parameters=[OpenApiParameter("public_id", str, OpenApiParameter.PATH, description="Incident id.")],
        request=None,
        responses={204: None, **catalogue_delete_errors()},
    )
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        incident: Incident = self.get_object()
        with refused_when_in_use():
            services.incident_draft_delete(incident=incident, actor=acting_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
