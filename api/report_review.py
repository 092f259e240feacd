"""The v1 review of an incident report (staff): the log, requesting reviewers, comments,
approval and sending back. The transitions are postmortems.review's; publishing stays
`POST .../report/publish/`, which answers 409 until the report is approved
(docs/adr/0021-report-review.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.http import Http404
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api import serializers as s
from api.base import DETAIL_WRITE_ERRORS, STAFF_READ_ERRORS, acting_user, errors
from api.catalogue import validated
from api.permissions import is_staff
from incidents.models import Incident, IncidentReport
from postmortems import review, selectors
from postmortems.models import ReviewEvent

if TYPE_CHECKING:
    from rest_framework.viewsets import GenericViewSet

    _Host = GenericViewSet
else:
    _Host = object

_ID = OpenApiParameter("public_id", str, OpenApiParameter.PATH, description="Incident id.")
NOT_APPROVED = OpenApiResponse(
    s.ErrorSerializer,
    description="Conflict: the report is not approved yet (`not_approved`), or a request with the "
    "same `Idempotency-Key` is still being processed.",
)


class ReviewEventSerializer(serializers.ModelSerializer):
    actor: serializers.SlugRelatedField[Any] = serializers.SlugRelatedField(
        slug_field="username", read_only=True, allow_null=True
    )
    body_html = s.MarkdownHTMLField()

    class Meta:
        model = ReviewEvent
        fields = ["kind", "status", "actor", "anchor", "body", "body_html", "created_at"]
        read_only_fields = fields


class ReviewSerializer(serializers.Serializer):
    """The report's status, who was asked to review it, and its log, oldest first."""

    status = serializers.ChoiceField(choices=IncidentReport.Status.choices)
    reviewers = serializers.ListField(child=serializers.CharField(), help_text="Usernames.")
    log = ReviewEventSerializer(many=True)


class ReviewRequestSerializer(s.StrictSerializer):
    reviewers = serializers.ListField(
        child=serializers.SlugRelatedField(
            slug_field="username", queryset=get_user_model().objects.filter(is_staff=True, is_active=True)
        ),
        min_length=1,
        help_text="Usernames of Report approvers.",
    )


class ReviewCommentSerializer(s.StrictSerializer):
    body = s.text(required_text=True, help_text="Markdown.")
    anchor = s.single_line(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="A report section (`summary`, `root_cause`, ...) or `timeline:<entry id>`; empty: the whole report.",
    )


class ReviewVerdictSerializer(s.StrictSerializer):
    comment = s.text(required=False, allow_blank=True, help_text="Markdown; required to request changes.")
    anchor = s.single_line(max_length=100, required=False, allow_blank=True)


class ReportReviewMixin(_Host):
    """Mixed into the incident viewsets before their base."""

    def _review(self, incident: Incident) -> Response:
        report = IncidentReport.objects.filter(incident=incident).first()
        if report is None:
            raise Http404("This incident has no report yet.")
        data = {
            "status": report.status,
            "reviewers": [r.reviewer.username for r in selectors.review_requests(report_id=report.pk)],
            "log": list(selectors.review_log(report_id=report.pk)),
        }
        return Response(ReviewSerializer(data).data)

    @extend_schema(
        summary="Get the report's review (staff)",
        description="Its status, the reviewers asked, and every transition and comment, oldest first.",
        parameters=[_ID],
        responses={200: ReviewSerializer, **errors(404, *STAFF_READ_ERRORS)},
    )
    @action(detail=True, methods=["get"], url_path="report/review")
    def report_review(self, request: Request, public_id: str) -> Response:
        if not is_staff(request):
            raise Http404("This incident has no report yet.")
        return self._review(self.get_object())

    @extend_schema(
        summary="Request review of the report (staff)",
        description="The author names Report approvers to review it; the report moves to in review.",
        parameters=[_ID],
        request=ReviewRequestSerializer,
        responses={200: ReviewSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="report/review/request")
    def report_review_request(self, request: Request, public_id: str) -> Response:
        incident = self.get_object()
        data = validated(ReviewRequestSerializer, request.data)
        review.review_request(incident=incident, reviewers=data["reviewers"], actor=acting_user(request))
        return self._review(incident)

    @extend_schema(
        summary="Comment on the report (staff)",
        description="On the whole report, one of its sections, or a timeline entry (`anchor`).",
        parameters=[_ID],
        request=ReviewCommentSerializer,
        responses={201: ReviewSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="report/review/comments")
    def report_review_comment(self, request: Request, public_id: str) -> Response:
        incident = self.get_object()
        data = validated(ReviewCommentSerializer, request.data)
        review.review_comment(
            incident=incident, body=data["body"], anchor=data.get("anchor", ""), actor=acting_user(request)
        )
        response = self._review(incident)
        response.status_code = status.HTTP_201_CREATED
        return response

    @extend_schema(
        summary="Approve the report (Report approver)",
        description="Approves the report in review as it stands; its author cannot approve it.",
        parameters=[_ID],
        request=ReviewVerdictSerializer,
        responses={200: ReviewSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="report/review/approve")
    def report_review_approve(self, request: Request, public_id: str) -> Response:
        incident = self.get_object()
        data = validated(ReviewVerdictSerializer, request.data)
        review.review_approve(incident=incident, comment=data.get("comment", ""), actor=acting_user(request))
        return self._review(incident)

    @extend_schema(
        summary="Request changes to the report (Report approver)",
        description="Sends the report back to draft with a comment saying what to change.",
        parameters=[_ID],
        request=ReviewVerdictSerializer,
        responses={200: ReviewSerializer, **errors(*DETAIL_WRITE_ERRORS)},
    )
    @action(detail=True, methods=["post"], url_path="report/review/request-changes")
    def report_review_request_changes(self, request: Request, public_id: str) -> Response:
        incident = self.get_object()
        data = validated(ReviewVerdictSerializer, request.data)
        review.review_request_changes(
            incident=incident,
            comment=data.get("comment", ""),
            anchor=data.get("anchor", ""),
            actor=acting_user(request),
        )
        return self._review(incident)


def publish_errors() -> dict[int, Any]:
    """The publish endpoint's errors: its 409 is also the refusal of an unapproved report."""
    return {**errors(*DETAIL_WRITE_ERRORS), 409: NOT_APPROVED}
