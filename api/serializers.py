"""Serializers of the v1 API: read shapes, and input shapes for the writes.

Serializers here only translate: reads take what the views fetched (with the visibility
already applied), writes validate types and hand the values to `incidents.services`,
which owns every rule. Markdown is returned raw and, in the `*_html` fields, rendered
through the one sanitising renderer.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.strict import type_errors
from core.text import TEXT_MAX_LENGTH
from incidents.markdown import stored_html
from incidents.models import (
    INCIDENT_STATUSES,
    MAINTENANCE_STATUSES,
    ActionItem,
    ImpactWindow,
    Incident,
    IncidentReport,
    IncidentUpdate,
    Location,
    Product,
)
from incidents.selectors import OPERATIONAL

# Product (component) statuses: the Statuspage strings, "operational" plus the levels.
PRODUCT_STATUSES = [OPERATIONAL, *ImpactWindow.Level.values]
# The statuses a new incident / maintenance may start in (closing ones come by resolving).
OPEN_INCIDENT_STATUSES = [(s.value, s.label) for s in INCIDENT_STATUSES[:3]]
OPEN_MAINTENANCE_STATUSES = [(s.value, s.label) for s in MAINTENANCE_STATUSES[:3]]


@extend_schema_field(OpenApiTypes.STR)
class MarkdownHTMLField(serializers.Field):
    """Read-only: the HTML rendered from the source Markdown when it was written."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value: str) -> str:
        return stored_html(value)


def incident_url(public_id: str) -> str:
    return f"{settings.SITE_URL}/incidents/{public_id}/"


# --- Reads ---------------------------------------------------------------------------------


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="As `code` above.")
    message = serializers.CharField(help_text="As `detail` above.")
    # Declared fields are popped into _declared_fields, so this does not shadow .fields.
    fields = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()), help_text="As `errors` above."
    )


_FIELD_MESSAGES = serializers.DictField(
    child=serializers.ListField(child=serializers.CharField()),
    help_text='Per-field messages by path (`{"windows.0.level": ["..."]}`); empty unless the input was invalid.',
)


class ErrorSerializer(serializers.Serializer):
    """The body of every error response: an RFC 9457 problem document."""

    type = serializers.CharField(help_text="The problem type (`about:blank`: see `status` and `code`).")
    title = serializers.CharField(help_text="The HTTP status's phrase, e.g. `Bad Request`.")
    status = serializers.IntegerField(help_text="The HTTP status code.")
    detail = serializers.CharField(help_text="One human sentence about this occurrence.")
    instance = serializers.CharField(help_text="The path of the request that failed.")
    code = serializers.CharField(help_text="Stable machine-readable code, e.g. `invalid`, `not_found`.")
    # Declared fields are popped into _declared_fields: this does not shadow .errors.
    errors = _FIELD_MESSAGES  # type: ignore[assignment]
    request_id = serializers.CharField(help_text="As in the `X-Request-ID` header; quote it when reporting.")
    error = ErrorDetailSerializer(help_text="Deprecated: the pre-RFC 9457 shape, kept for existing clients.")


class ProductSerializer(serializers.ModelSerializer):
    id = serializers.CharField(source="public_id", read_only=True)
    group = serializers.CharField(source="group.name", allow_null=True, default=None, read_only=True)
    status = serializers.SerializerMethodField()

    class Meta:
        model = Product
        fields = [
            "id",
            "slug",
            "name",
            "description",
            "group",
            "position",
            "status",
            "is_public",
            "archived_at",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ChoiceField(choices=PRODUCT_STATUSES))
    def get_status(self, product: Product) -> str:
        statuses: dict[int, str] = self.context.get("statuses", {})
        return statuses.get(product.pk, OPERATIONAL)


class LocationSerializer(serializers.ModelSerializer):
    parent = serializers.CharField(source="parent.name", allow_null=True, default=None, read_only=True)  # type: ignore[assignment]

    class Meta:
        model = Location
        fields = ["name", "display_name", "kind", "parent"]
        read_only_fields = fields


class WindowSerializer(serializers.ModelSerializer):
    product = serializers.CharField(source="product.slug", read_only=True)
    product_name = serializers.CharField(source="product.name", read_only=True)
    location = serializers.CharField(source="location.name", allow_null=True, default=None, read_only=True)
    description_html = MarkdownHTMLField()

    class Meta:
        model = ImpactWindow
        fields = [
            "id",
            "product",
            "product_name",
            "location",
            "level",
            "started_at",
            "ended_at",
            "description",
            "description_html",
        ]
        read_only_fields = fields


class UpdateSerializer(serializers.ModelSerializer):
    body_html = MarkdownHTMLField()

    class Meta:
        model = IncidentUpdate
        fields = ["id", "status", "body", "body_html", "display_at", "created_at", "edited_at"]
        read_only_fields = fields


class ReportSerializer(serializers.ModelSerializer):
    summary_html = MarkdownHTMLField()
    root_cause_html = MarkdownHTMLField()
    remediation_html = MarkdownHTMLField()
    impact_description_html = MarkdownHTMLField()

    class Meta:
        model = IncidentReport
        fields = [
            "kind",
            "status",
            "summary",
            "summary_html",
            "root_cause",
            "root_cause_html",
            "remediation",
            "remediation_html",
            "impact_description",
            "impact_description_html",
            "published_at",
            "updated_at",
        ]
        read_only_fields = fields


class IncidentSerializer(serializers.ModelSerializer):
    """An incident or maintenance as the caller may see it.

    The view prefetches only what the caller may see (public windows for non-staff);
    the report is shown to non-staff only once published.
    """

    id = serializers.CharField(source="public_id", read_only=True)
    url = serializers.SerializerMethodField()
    summary_html = MarkdownHTMLField()
    recurrence_of = serializers.SerializerMethodField()
    windows = WindowSerializer(many=True, read_only=True)
    updates = UpdateSerializer(many=True, read_only=True)
    report = serializers.SerializerMethodField()

    class Meta:
        model = Incident
        fields = [
            "id",
            "url",
            "kind",
            "title",
            "summary",
            "summary_html",
            "status",
            "impact",
            "started_at",
            "detected_at",
            "mitigated_at",
            "resolved_at",
            "scheduled_for",
            "scheduled_until",
            "recurrence_of",
            "is_public",
            "created_at",
            "updated_at",
            "windows",
            "updates",
            "report",
        ]
        read_only_fields = fields

    def get_url(self, incident: Incident) -> str:
        return incident_url(incident.public_id)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_recurrence_of(self, incident: Incident) -> str | None:
        previous = incident.recurrence_of
        if previous is None:
            return None
        if not self.context.get("is_staff") and not previous.is_public:
            return None
        return previous.public_id

    @extend_schema_field(ReportSerializer(allow_null=True))
    def get_report(self, incident: Incident) -> dict[str, Any] | None:
        try:
            report = incident.report
        except IncidentReport.DoesNotExist:
            return None
        if not (report.is_published or self.context.get("is_staff")):
            return None
        return ReportSerializer(report, context=self.context).data  # type: ignore[return-value]


class ActionItemSerializer(serializers.ModelSerializer):
    incident = serializers.CharField(source="incident.public_id", read_only=True)
    # "" when there is no tracker link: a URI or empty, as in the request.
    tracker_url = serializers.URLField(read_only=True, allow_blank=True)
    owner = serializers.CharField(source="owner.get_username", allow_null=True, default=None, read_only=True)

    class Meta:
        model = ActionItem
        fields = ["id", "incident", *ActionItem.FIELDS, "created_at", "updated_at"]
        read_only_fields = fields


class OverallStatusProductSerializer(serializers.Serializer):
    id = serializers.CharField()
    slug = serializers.CharField()
    name = serializers.CharField()
    status = serializers.ChoiceField(choices=PRODUCT_STATUSES)


class OverallStatusSerializer(serializers.Serializer):
    indicator = serializers.ChoiceField(choices=["none", "maintenance", "minor", "major", "critical"])
    description = serializers.CharField()
    active_incidents = serializers.IntegerField(help_text="Unresolved public incidents.")
    active_maintenance = serializers.IntegerField(help_text="Maintenance in progress or verifying.")
    products = OverallStatusProductSerializer(many=True)


# --- Writes --------------------------------------------------------------------------------

# What the services take as a single-line name (core.text.clean_single_line): no control
# characters or line breaks, and something besides spaces. The same rule here puts it in
# the schema as a `pattern`, so a client can tell before sending.
_LINE = r"[^\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]"
_NOT_SPACE = r"[^\s\x00-\x1f\x7f-\x9f\u2028\u2029]"
SINGLE_LINE = RegexValidator(
    rf"^{_LINE}*{_NOT_SPACE}{_LINE}*$", "One line of text, without control characters.", code="invalid"
)


def single_line(max_length: int = 200, **kwargs: Any) -> serializers.CharField:
    return serializers.CharField(max_length=max_length, validators=[SINGLE_LINE], **kwargs)


# DRF refuses NUL in any string (ProhibitNullCharactersValidator); the other control
# characters in multi-line text are removed by the service. The pattern says the first,
# and for a required body that something besides spaces and control characters is left.
NO_NUL = RegexValidator(r"^[^\x00]*$", "Null characters are not allowed.", code="null_characters_not_allowed")
SOME_TEXT = RegexValidator(
    r"^[^\x00]*[^\s\x00-\x1f\x7f-\x9f\u2028\u2029\ufffe\uffff][^\x00]*$",
    "Text is required (and null characters are not allowed).",
    code="required",
)


def text(*, required_text: bool = False, **kwargs: Any) -> serializers.CharField:
    """Multi-line text (Markdown, notes): control characters are removed by the service."""
    return serializers.CharField(
        max_length=TEXT_MAX_LENGTH, validators=[SOME_TEXT if required_text else NO_NUL], **kwargs
    )


# Times the services accept (core.text.check_time): none before 1970, and a start or a
# resolution not after now (a few minutes' clock skew allowed); planned times at most
# about five years ahead. JSON Schema cannot bound a date-time, so the descriptions say it.
PAST_TIME = "From 1970 to now (times in the future are refused)."
PLANNED_TIME = "From 1970 to about five years from now."
WINDOW_TIME = "From 1970; for an incident not after now, for a maintenance up to about five years ahead."


class StrictSerializer(serializers.Serializer):
    """Input that refuses fields it does not know, naming them (`"components"` is a typo
    of `"windows"`, not something to drop silently), and values of the wrong JSON type
    (api.strict). Mix in before ModelSerializer too."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
            # Wrong JSON types are refused, not coerced (api.strict).
            wrong = type_errors(dict(self.fields), data)
            if wrong:
                raise serializers.ValidationError(wrong)
        return super().to_internal_value(data)


class WindowInputSerializer(StrictSerializer):
    product = serializers.SlugRelatedField(slug_field="slug", queryset=Product.objects.all())
    location = serializers.SlugRelatedField(
        slug_field="name", queryset=Location.objects.all(), required=False, allow_null=True
    )
    level = serializers.ChoiceField(choices=ImpactWindow.Level.choices)
    started_at = serializers.DateTimeField(help_text=WINDOW_TIME)
    ended_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text=f"Not before `started_at`. {WINDOW_TIME}"
    )
    description = text(required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # Checked here as well as in the service so that the error is nested under its
        # window (`windows.1.ended_at`): the service sees one window at a time.
        ended_at = attrs.get("ended_at")
        if ended_at is not None and ended_at < attrs["started_at"]:
            raise serializers.ValidationError({"ended_at": "The end must not be before the start."})
        return attrs


class IncidentCreateSerializer(StrictSerializer):
    title = single_line()
    summary = text(required=False, allow_blank=True, default="")
    body = text(required=False, allow_blank=True, default="", help_text="First timeline entry (Markdown).")
    impact = serializers.ChoiceField(
        choices=Incident.Impact.choices,
        required=False,
        help_text="Default: what the worst window level implies (`degraded_performance` minor, "
        "`partial_outage` major, `major_outage` critical), `none` without windows; as in the console.",
    )
    status = serializers.ChoiceField(choices=OPEN_INCIDENT_STATUSES, default=Incident.Status.INVESTIGATING)
    started_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="When customer impact began. Default: the start of the earliest window, else "
        "`detected_at`, else now. " + PAST_TIME,
    )
    detected_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text=f"Not before `started_at`. {PAST_TIME}"
    )
    first_update_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        default=None,
        help_text="The shown time of the first timeline entry. Default: now, when it is posted; an "
        f"earlier time backdates it (not before `started_at`). {PAST_TIME}",
    )
    recurrence_of = serializers.SlugRelatedField(
        slug_field="public_id", queryset=Incident.objects.all(), required=False, allow_null=True, default=None
    )
    is_public = serializers.BooleanField(default=True)
    internal_notes = text(required=False, allow_blank=True, default="")
    notify = serializers.BooleanField(default=True, help_text="Notify subscribers of the first update.")
    windows = WindowInputSerializer(many=True, required=False, default=list)


class MaintenanceCreateSerializer(StrictSerializer):
    title = single_line()
    summary = text(required=False, allow_blank=True, default="")
    body = text(required=False, allow_blank=True, default="")
    impact = serializers.ChoiceField(
        choices=Incident.Impact.choices,
        required=False,
        help_text="Default: what the worst window level implies (`none` for maintenance windows).",
    )
    status = serializers.ChoiceField(choices=OPEN_MAINTENANCE_STATUSES, default=Incident.Status.SCHEDULED)
    scheduled_for = serializers.DateTimeField(help_text=PLANNED_TIME)
    scheduled_until = serializers.DateTimeField(help_text=f"Not before `scheduled_for`. {PLANNED_TIME}")
    is_public = serializers.BooleanField(default=True)
    internal_notes = text(required=False, allow_blank=True, default="")
    notify = serializers.BooleanField(default=True)
    windows = WindowInputSerializer(many=True, required=False, default=list)


# A product's level as an update sets it: the impact levels, or back to operational.
TARGET_LEVEL_CHOICES = [("operational", "Operational"), *ImpactWindow.Level.choices]


class LevelInputSerializer(StrictSerializer):
    """One product (optionally in one location) and its level from the update's time on."""

    product = serializers.SlugRelatedField(slug_field="slug", queryset=Product.objects.all())
    location = serializers.SlugRelatedField(
        slug_field="name", queryset=Location.objects.all(), required=False, allow_null=True, default=None
    )
    level = serializers.ChoiceField(
        choices=TARGET_LEVEL_CHOICES,
        help_text="`operational` ends the product's open window; another level closes it and opens a new one.",
    )


class UpdateCreateSerializer(StrictSerializer):
    status = serializers.ChoiceField(
        choices=Incident.Status.choices,
        help_text="Must be a status of the incident's kind; resolved/completed resolves it.",
    )
    body = text(required_text=True)
    display_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text=f"Default now. {WINDOW_TIME}"
    )
    notify = serializers.BooleanField(default=True)
    levels = LevelInputSerializer(
        many=True,
        required=False,
        default=list,
        help_text=(
            "Each affected product's level from this update on, as the console sets it: the "
            "impact windows (and so the bars, uptime and SLA credits) follow. A status that "
            "resolves the incident ends every impact: levels other than `operational` are refused."
        ),
    )


class UpdateEditSerializer(StrictSerializer):
    """A correction of a published update's text; its status and times stay."""

    body = text(required_text=True)


class ResolveSerializer(StrictSerializer):
    body = text(required=False, allow_blank=True, default="")
    resolved_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text=f"Default now. {WINDOW_TIME}"
    )
    notify = serializers.BooleanField(default=True)


class ReportSaveSerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=IncidentReport.Kind.choices, default=IncidentReport.Kind.FULL)
    summary = text(required=False, allow_blank=True, default="")
    root_cause = text(required=False, allow_blank=True, default="")
    remediation = text(required=False, allow_blank=True, default="")
    impact_description = text(required=False, allow_blank=True, default="")


class ReportPublishSerializer(StrictSerializer):
    published_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="Default now."
    )


class ActionItemCreateSerializer(StrictSerializer):
    """ActionItem.FIELDS but `status` (a new item is open), declared for their validators;
    tests/incidents/test_one_write_path.py holds them to the list."""

    incident = serializers.SlugRelatedField(slug_field="public_id", queryset=Incident.objects.all())
    title = single_line()
    description = text(required=False, allow_blank=True, default="")
    type = serializers.ChoiceField(choices=ActionItem.Type.choices, default=ActionItem.Type.PREVENT)
    priority = serializers.ChoiceField(choices=ActionItem.Priority.choices, default=ActionItem.Priority.P2)
    owner = serializers.SlugRelatedField(
        slug_field="username",
        queryset=get_user_model().objects.filter(is_staff=True, is_active=True),
        required=False,
        allow_null=True,
        default=None,
    )
    due_date = serializers.DateField(required=False, allow_null=True, default=None)
    # No default: "" is not a URI, and the service defaults to "" (no tracker) itself.
    tracker_url = serializers.URLField(
        required=False,
        allow_blank=True,
        max_length=200,
        # URLValidator takes these schemes only; `format: uri` alone allows any (`urn:x`).
        validators=[RegexValidator(r"^(?:[hH][tT][tT][pP][sS]?|[fF][tT][pP][sS]?)://", code="invalid")],
    )
    is_public = serializers.BooleanField(default=False)


class IncidentEditSerializer(StrictSerializer):
    """A partial edit: send only what changes. Status moves through updates, not here."""

    title = single_line(required=False)
    summary = text(required=False, allow_blank=True)
    impact = serializers.ChoiceField(choices=Incident.Impact.choices, required=False)
    is_public = serializers.BooleanField(required=False, help_text="Visibility on the public page and API.")


class WindowEditSerializer(StrictSerializer):
    """A partial edit of one impact window: fields not sent keep their value."""

    product = serializers.SlugRelatedField(slug_field="slug", queryset=Product.objects.all(), required=False)
    location = serializers.SlugRelatedField(
        slug_field="name", queryset=Location.objects.all(), required=False, allow_null=True
    )
    level = serializers.ChoiceField(choices=ImpactWindow.Level.choices, required=False)
    started_at = serializers.DateTimeField(required=False, help_text=WINDOW_TIME)
    ended_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text=f"Not before `started_at`. {WINDOW_TIME}"
    )
    description = text(required=False, allow_blank=True)


class WindowEndSerializer(StrictSerializer):
    ended_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text=f"Defaults to now. {WINDOW_TIME}"
    )
