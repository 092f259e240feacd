"""Alert intake: POST /api/v1/integrations/<id>/alerts/ takes each vendor's payload as sent.

Thin: check the size, the credentials (bearer token, or for the generic kind the HMAC over
a timestamp and the body, with a delivery id accepted once) and the per-integration rate, then hand the raw body to
`alerts.services.alerts_receive`. The body is read by us, not by DRF's parsers, because
the HMAC is over the exact bytes and each vendor's JSON is parsed by its own parser.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from alerts import services
from api.base import errors
from api.throttling import _FailOpenRateThrottle, client_address


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The payload is too large."
    default_code = "too_large"


class IntegrationThrottle(_FailOpenRateThrottle):
    """Per integration, counted after its credentials pass: a stranger guessing tokens
    cannot use up a real sender's allowance."""

    scope = "alerts"

    def get_rate(self) -> str | None:
        return str(settings.ALERTS_INTAKE_RATE)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        return self.cache_format % {
            "scope": self.scope,
            "ident": f"integration-{view.kwargs['integration_id']}",
        }


def _read_body(request: Request) -> bytes:
    limit = int(settings.ALERTS_MAX_PAYLOAD_BYTES)
    too_large = PayloadTooLarge(f"The payload is larger than {limit} bytes.")
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise exceptions.ParseError("Bad Content-Length.") from None
    if declared > limit:
        raise too_large
    # At most one byte over the limit is read, whatever the client claimed.
    body = request._request.read(limit + 1)
    if len(body) > limit:
        raise too_large
    return body


class AlertIntakeView(APIView):
    """Receive alerts from an integration (Alertmanager, Grafana or generic JSON)."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []
    throttle_classes: list[Any] = []
    renderer_classes = [JSONRenderer]
    parser_classes: list[Any] = []

    def get_authenticate_header(self, request: Request) -> str:
        # Makes DRF answer 401 (not 403) to bad credentials, with the scheme to use.
        return 'Bearer realm="alerts"'

    @extend_schema(
        summary="Receive alerts from an integration",
        description=(
            "Where Prometheus Alertmanager (webhook v4), Grafana alerting or a generic sender "
            "posts its payload, as the vendor sends it. Authenticated by the integration's own "
            "secret (`Authorization: Bearer <secret>`, or for the generic kind an `X-Signature-256` "
            "HMAC over `<X-Status-Timestamp>.<body>` with a unique `X-Status-Delivery`), not by an "
            "API key; a stale timestamp or a replayed delivery is refused with 401. A firing alert opens or joins a draft incident; "
            "a resolved one closes its window. The same payload twice changes nothing."
        ),
        request={"application/json": {"type": "object"}},
        responses={
            200: OpenApiResponse(description="Applied: what each alert did."),
            **errors(400, 401, 404, 429),
            413: OpenApiResponse(description="The body is over ALERTS_MAX_PAYLOAD_BYTES."),
        },
        auth=[],
    )
    def post(self, request: Request, integration_id: int) -> Response:
        body = _read_body(request)
        try:
            integration = services.integration_authenticate(
                integration_id=integration_id,
                authorization=request.META.get("HTTP_AUTHORIZATION", ""),
                signature=request.META.get("HTTP_X_SIGNATURE_256", ""),
                timestamp=request.META.get("HTTP_X_STATUS_TIMESTAMP", ""),
                delivery=request.META.get("HTTP_X_STATUS_DELIVERY", ""),
                body=body,
            )
        except services.IntakeUnauthorized as exc:
            raise exceptions.AuthenticationFailed(str(exc)) from None
        throttle = IntegrationThrottle()
        if not throttle.allow_request(request, self):
            self.throttled(request, throttle.wait() or 1.0)
        try:
            result = services.alerts_receive(
                integration=integration, body=body, remote_addr=client_address(request)
            )
        except services.PayloadError as exc:
            raise exceptions.ParseError(str(exc)) from None
        return Response(result.as_dict())
