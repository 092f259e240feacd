"""Text rules every room shares: what a single-line value may contain."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

# C0 controls (except tab), DEL and C1 controls. A title or name ends up in email
# subjects and headers, so CR/LF there must never get through. U+2028/U+2029 are line
# breaks too (str.splitlines() splits on them), so they are refused with the rest.
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def clean_single_line(value: str, *, field: str, max_length: int = 200) -> str:
    """Strip surrounding space and refuse control characters and overlong values."""
    value = (value or "").strip()
    if not value:
        raise ValidationError({field: "This field is required."})
    if CONTROL_CHARS.search(value):
        raise ValidationError({field: "Line breaks and control characters are not allowed."})
    if len(value) > max_length:
        raise ValidationError({field: f"At most {max_length} characters."})
    return value


def site_title(site_name: str) -> str:
    """What pages and emails call the status page: "Acme status", but "Acme Status" (not
    "Acme Status status") when the configured name already says so."""
    name = (site_name or "").strip()
    if re.search(r"\bstatus\b", name, flags=re.IGNORECASE):
        return name
    return f"{name} status"
