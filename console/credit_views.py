"""The credits room of the console: review a month, explain a notice, preview its letter,
confirm and send, the audit log, statements and CSV exports. Thin: parse, call one
selector or service, render."""

from __future__ import annotations

from datetime import date

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_POST

from console.credit_forms import ComputeForm
from console.views import console_view
from core import roles
from core.admin import add_validation_errors
from credits import confirm, emails, exports, selectors, services, sla
from credits.models import CreditNotice, Customer, NoticeState

# The letter's own HTML carries inline styles (email clients need them); it is shown in a
# sandboxed frame with a policy of its own, never inside a console page.
LETTER_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'; sandbox"


def _period(value: str) -> str:
    try:
        return str(sla.Period.parse(value)) if value else ""
    except ValueError:
        return ""


@console_view
def credits_review(request: HttpRequest) -> HttpResponse:
    return _review(request, period=request.GET.get("period", ""), form=ComputeForm(initial=_last_month()))


@require_POST
@console_view
def credits_compute(request: HttpRequest) -> HttpResponse:
    """Compute (or recompute) a month, then show it with what changed. A bad or future
    month comes back as an error on the form, with nothing computed."""
    form = ComputeForm(request.POST)
    if form.is_valid():
        try:
            summary = services.credits_compute(
                period=form.cleaned_data["period"],
                actor=request.user,  # type: ignore[arg-type]
                via="console",
            )
        except ValidationError as exc:
            add_validation_errors(form, exc)
        else:
            messages.success(request, _computed(summary))
            return HttpResponseRedirect(f"{reverse('console:credits')}?period={summary.period}")
    return _review(request, period=request.POST.get("shown", ""), form=form, status=400)


def _last_month() -> dict[str, str]:
    return {"period": str(sla.Period.containing(timezone.localdate()).previous())}


def _computed(summary: services.ComputeSummary) -> str:
    label = _month_label(summary.period)
    if not summary.notice_ids:
        return (
            f"{label} computed: {summary.customers_considered} customer(s) measured, nobody is owed a credit."
        )
    text = (
        f"{label} computed: {summary.customers_considered} customer(s) measured; notices created "
        f"{summary.created}, updated {summary.updated}, unchanged {summary.unchanged}, removed {summary.removed}"
    )
    if summary.kept_final:
        text += f"; {summary.kept_final} already approved, sent or cancelled, left exactly as they were"
    if summary.period == str(sla.Period.containing(timezone.localdate())):
        text += ". The month is not over: these figures count until now; compute it again after it ends"
    return text + ". Nothing is sent until you review and send."


def _month_label(period: str) -> str:
    month = sla.Period.parse(period)
    return date(month.year, month.month, 1).strftime("%B %Y")


def _review(request: HttpRequest, *, period: str, form: ComputeForm, status: int = 200) -> HttpResponse:
    periods = selectors.notice_periods()
    period = _period(period) or (periods[0] if periods else "")
    if period and period not in periods:
        periods = sorted({*periods, period}, reverse=True)  # a month computed with no notice
    policy_raw = request.GET.get("policy", "")
    policy_id = int(policy_raw) if policy_raw.isdigit() else None
    state = request.GET.get("state", "")
    state = state if state in NoticeState.values else ""
    notices = list(selectors.notices_filtered(period=period, policy_id=policy_id, state=state))
    return render(
        request,
        "console/credits.html",
        {
            "notices": notices,
            "totals": selectors.notice_totals(notices),
            "rows": _rows(notices),
            "periods": periods,
            "period": period,
            "policies": selectors.policies_by_name(),
            "policy_id": policy_id,
            "states": NoticeState.choices,
            "state": state,
            "sendable": [n for n in notices if n.state in confirm.SENDABLE],
            "audit": selectors.audit_entries(period=period),
            "compute_form": form,
        },
        status=status,
    )


def _rows(notices: list[CreditNotice]) -> list[tuple[CreditNotice, str, bool]]:
    labels = selectors.entitlement_labels(notices)
    return [(n, labels.get(n.pk, ""), n.state in confirm.SENDABLE) for n in notices]


def _notice(pk: int) -> CreditNotice:
    return get_object_or_404(CreditNotice.objects.select_related("customer", "policy"), pk=pk)


@console_view
def credit_notice(request: HttpRequest, pk: int) -> HttpResponse:
    notice = _notice(pk)
    breakdown = selectors.notice_breakdown(notice)
    return render(
        request,
        "console/credit_notice.html",
        {
            "notice": notice,
            "breakdown": breakdown,
            "entitlements": selectors.notice_entitlements(notice),
            "audit": selectors.audit_entries(notice=notice),
            "sendable": notice.state in confirm.SENDABLE,
        },
    )


@console_view
def credit_letter(request: HttpRequest, pk: int) -> HttpResponse:
    roles.check(request.user, "credits.review")
    notice = _notice(pk)
    subject, text, _ = emails.preview_credit_notice(notice)
    return render(
        request,
        "console/credit_letter.html",
        {
            "notice": notice,
            "subject": subject,
            "text": text,
            "recipients": notice.customer.billing_emails,
            "from_email": settings.DEFAULT_FROM_EMAIL,
            "reply_to": settings.CREDITS_REPLY_TO,
        },
    )


@xframe_options_sameorigin
@console_view
def credit_letter_html(request: HttpRequest, pk: int) -> HttpResponse:
    roles.check(request.user, "credits.review")
    notice = _notice(pk)
    _, _, html = emails.preview_credit_notice(notice)
    response = HttpResponse(html)
    response["Content-Security-Policy"] = LETTER_CSP
    return response


def _ids(values: list[str]) -> list[int]:
    return sorted({int(v) for v in values if v.isdigit()})[:10000]


@console_view
def credits_confirm(request: HttpRequest) -> HttpResponse:
    """Step two: what would go out. GET ?ids=..&ids=.. (from the review form)."""
    ids = _ids(request.GET.getlist("ids"))
    if not ids:
        messages.error(request, "Select at least one notice to send.")
        return HttpResponseRedirect(reverse("console:credits"))
    plan = confirm.send_preview(ids=ids, actor=request.user, via=request.GET.get("via", "console")[:16])
    return render(
        request,
        "console/credits_confirm.html",
        {"plan": plan, "second_approver_above": settings.CREDITS_SECOND_APPROVER_ABOVE},
    )


@require_POST
@console_view
def credits_send(request: HttpRequest) -> HttpResponse:
    """Step three: send exactly what the confirmation page showed, or nothing (above the
    four-eyes limit, the first Finance user's press prepares it for a second one)."""
    try:
        summary = confirm.credits_send_confirmed(
            token=request.POST.get("confirmation", ""), actor=request.user, via="console"
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages) + " Nothing was sent.")
        return HttpResponseRedirect(reverse("console:credits"))
    if summary.awaiting_approval:
        messages.success(
            request,
            f"Prepared by {summary.prepared_by}: a different Finance user must approve this send. "
            "Nothing was sent.",
        )
        return HttpResponseRedirect(reverse("console:credits"))
    messages.success(
        request,
        f"{summary.queued} notice(s) approved and queued, {summary.retried} failed one(s) retried, "
        f"{summary.skipped} skipped.",
    )
    return HttpResponseRedirect(reverse("console:credits"))


@require_POST
@console_view
def credit_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        services.credits_cancel(notice=_notice(pk), actor=request.user, via="console")  # type: ignore[arg-type]
        messages.success(request, "Notice cancelled; it will not be sent.")
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    return HttpResponseRedirect(reverse("console:credit_notice", args=[pk]))


@console_view
def credits_export(request: HttpRequest) -> HttpResponse:
    selectors.statements_readable(actor=request.user)
    period = _period(request.GET.get("period", ""))
    if not period:
        raise Http404("Give ?period=YYYY-MM")
    body = exports.notices_csv(selectors.notices_filtered(period=period))
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="credit-notices-{period}.csv"'
    return response


@console_view
def customer_statement(request: HttpRequest, pk: int) -> HttpResponse:
    selectors.statements_readable(actor=request.user)
    customer = get_object_or_404(Customer, pk=pk)
    period = _period(request.GET.get("period", "")) or str(sla.Period.containing(timezone.localdate()))
    st = exports.statement(customer, sla.Period.parse(period))
    if request.GET.get("output") == "csv":
        response = HttpResponse(exports.statement_csv(st), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="sla-statement-{customer.pk}-{period}.csv"'
        return response
    return render(request, "console/credit_statement.html", {"st": st, "period": period})
