"""`manage.py sla_credits compute|send --period YYYY-MM`."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import roles
from credits import confirm, selectors, services, sla
from credits.models import NoticeState


class Command(BaseCommand):
    help = (
        "SLA credits for one calendar month. `compute --period YYYY-MM` measures every "
        "SLA-eligible customer entitled to an affected product against its policy and "
        "creates or refreshes a notice for each one owed a credit, for review; running it "
        "again changes nothing, and notices already approved or sent are never touched. "
        "`--json` prints one JSON object per notice. `send --period YYYY-MM` shows what would "
        "go out (count, total credit, recipients), asks for confirmation (or takes --yes; with "
        "no terminal and no --yes it refuses and sends nothing), then approves the "
        "computed notices of that month and queues one email each (retrying failed ones); "
        "delivery then happens in the background and day credits extend the customer's "
        "term once the email is sent. `--as USERNAME` names the person the command acts for: "
        "send needs it (a Finance user; above CREDITS_SECOND_APPROVER_ABOVE the first run "
        "prepares and a second Finance user's run sends), compute runs as the system without it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="{compute,send}")
        compute = sub.add_parser("compute", help="Compute notices for review.")
        compute.add_argument("--period", required=True, help="Calendar month, YYYY-MM.")
        compute.add_argument("--json", action="store_true", help="Print one JSON object per notice.")
        compute.add_argument(
            "--as", dest="as_user", metavar="USERNAME", help="Act as this user (else the system)."
        )
        send = sub.add_parser("send", help="Approve computed notices and queue their emails.")
        send.add_argument("--period", required=True, help="Calendar month, YYYY-MM.")
        send.add_argument("--yes", action="store_true", help="Send without asking (scripts).")
        send.add_argument(
            "--as", dest="as_user", metavar="USERNAME", required=True, help="The Finance user who sends."
        )

    def _progress(self, done: int, total: int) -> None:
        # To stderr, so `--json` output stays machine-readable.
        if total:
            sys.stderr.write(f"  {done}/{total}\n")
        else:
            sys.stderr.write(f"  {done} customers measured...\n")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            period = sla.Period.parse(options["period"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        actor = _user(options.get("as_user"))
        try:
            if options["action"] == "compute":
                self._compute(period, as_json=options["json"], actor=actor)
            else:
                self._send(period, yes=options.get("yes", False), actor=actor)
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except PermissionDenied as exc:
            raise CommandError(f"Permission denied: {exc}") from None

    def _compute(self, period: sla.Period, *, as_json: bool, actor: AbstractBaseUser | None) -> None:
        summary = services.credits_compute(period=period, progress=self._progress, actor=actor, via="command")
        notices = selectors.notices_for_period(period=str(period))
        if as_json:
            for notice in notices.iterator(chunk_size=2000):
                self.stdout.write(
                    json.dumps(
                        {
                            "id": notice.pk,
                            "customer": notice.customer.name,
                            "customer_id": notice.customer_id,
                            "policy": notice.policy.name,
                            "period": notice.period,
                            "downtime_minutes": str(notice.downtime_minutes),
                            "uptime_percent": str(notice.uptime_percent),
                            "credit": str(notice.credit),
                            "unit": notice.unit,
                            "credit_amount": None
                            if notice.credit_amount is None
                            else str(notice.credit_amount),
                            "state": notice.state,
                            "versions": notice.versions,
                        }
                    )
                )
            return
        for notice in notices:
            amount = (
                f" ({notice.customer.currency} {notice.credit_amount})"
                if notice.credit_amount is not None
                else ""
            )
            versions = len(notice.versions or ())
            spans = f"  ({versions} policy versions)" if versions > 1 else ""
            self.stdout.write(
                f"{notice.customer.name:40} {notice.uptime_percent:>9}%  {notice.credit:>6} {notice.unit}{amount}"
                f"  [{notice.state}]{spans}"
            )
        self.stdout.write(
            self.style.SUCCESS(
                f"{period}: {summary.customers_considered} customers measured; notices created "
                f"{summary.created}, updated {summary.updated}, unchanged {summary.unchanged}, "
                f"removed {summary.removed}, past review {summary.kept_final}."
            )
        )

    def _send(self, period: sla.Period, *, yes: bool, actor: AbstractBaseUser | None) -> None:
        roles.check(actor, "credits.send")
        notices = selectors.notices_for_period(
            period=str(period), states=[NoticeState.COMPUTED, NoticeState.APPROVED, NoticeState.FAILED]
        )
        plan = confirm.send_plan(ids=list(notices.values_list("pk", flat=True)))
        if not plan.count:
            self.stdout.write(f"{period}: nothing to send.")
            return
        totals = [f"{plan.count} letter(s)"]
        if plan.days:
            totals.append(f"{plan.days.normalize():f} day(s) of service")
        if plan.percent_letters:
            totals.append(f"{plan.percent_letters} percent-of-bill credit(s)")
        totals += [f"{m.currency} {m.amount}" for m in plan.money]
        self.stdout.write(f"{period}: {', '.join(totals)} to {plan.recipient_count} address(es):")
        for name, addresses in plan.recipients[:20]:
            self.stdout.write(f"  {name}: {', '.join(addresses)}")
        if len(plan.recipients) > 20:
            self.stdout.write(f"  ... and {len(plan.recipients) - 20} more")
        if not yes:
            if not sys.stdin.isatty():
                confirm.refuse_unconfirmed(actor=actor, via="command", detail="no terminal and no --yes")
                raise CommandError("Not sent: no terminal to ask on. Run again with --yes to send.")
            answer = input("Send these letters now? Type 'yes' to send: ").strip().lower()
            if answer != "yes":
                confirm.refuse_unconfirmed(actor=actor, via="command", detail=f"answered {answer[:20]!r}")
                raise CommandError("Not sent.")
        confirm.plan_shown(plan=plan, actor=actor, via="command")
        summary = confirm.credits_send_confirmed(token=plan.token, actor=actor, via="command")
        if summary.awaiting_approval:
            self.stdout.write(
                self.style.WARNING(
                    f"{period}: prepared by {summary.prepared_by}; nothing was sent. Above "
                    f"{settings.CREDITS_SECOND_APPROVER_ABOVE} a different Finance user sends it: "
                    "run again with --as THEIR_USERNAME."
                )
            )
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"{period}: {summary.queued} notices approved and queued, {summary.retried} failed ones "
                f"retried, {summary.skipped} skipped."
            )
        )


def _user(username: str | None) -> AbstractBaseUser | None:
    """The active user named by --as; None (the system) without it."""
    if username is None:
        return None
    user = get_user_model().objects.filter(username=username, is_active=True).first()
    if user is None:
        raise CommandError(f"--as {username}: no active user of that name.")
    return user
