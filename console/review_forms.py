"""Forms of the report review screen and the report templates screen: they parse the
shape of input; the rules run in postmortems.review and postmortems.services."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Q

from console.forms import _markdown_area
from core.roles import permission
from postmortems.models import ContributingFactor, Reflection, ReportTemplate
from postmortems.review import SECTION_ANCHORS


def _approvers() -> Any:
    app_label, codename = permission("report.publish").split(".")
    holds = Q(groups__permissions__codename=codename, groups__permissions__content_type__app_label=app_label)
    return (
        get_user_model()
        .objects.filter(is_staff=True, is_active=True)
        .filter(holds | Q(is_superuser=True))
        .distinct()
        .order_by("username")
    )


class ReviewRequestForm(forms.Form):
    reviewers = forms.ModelMultipleChoiceField(
        queryset=get_user_model().objects.none(),
        widget=forms.CheckboxSelectMultiple,
        help_text="People with the Report approver role.",
    )

    def __init__(self, *args: Any, exclude: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["reviewers"]
        assert isinstance(field, forms.ModelMultipleChoiceField)
        field.queryset = _approvers().exclude(pk=exclude) if exclude else _approvers()


class ReviewCommentForm(forms.Form):
    anchor = forms.ChoiceField(label="About", required=False, choices=list(SECTION_ANCHORS.items()))
    body = forms.CharField(label="Comment", widget=_markdown_area(3), help_text="Markdown.")


class ReviewVerdictForm(forms.Form):
    """Approve (comment optional) or request changes (comment required)."""

    anchor = forms.ChoiceField(label="About", required=False, choices=list(SECTION_ANCHORS.items()))
    comment = forms.CharField(
        widget=_markdown_area(3), required=False, help_text="Required when you request changes."
    )


class ReflectionsForm(forms.Form):
    went_well = forms.CharField(
        label=Reflection.Section.WENT_WELL.label, widget=_markdown_area(3), required=False
    )
    went_well_public = forms.BooleanField(label="Listed on the public report", required=False)
    went_wrong = forms.CharField(
        label=Reflection.Section.WENT_WRONG.label, widget=_markdown_area(3), required=False
    )
    went_wrong_public = forms.BooleanField(label="Listed on the public report", required=False)
    got_lucky = forms.CharField(
        label=Reflection.Section.GOT_LUCKY.label, widget=_markdown_area(3), required=False
    )
    got_lucky_public = forms.BooleanField(label="Listed on the public report", required=False)


class FactorForm(forms.Form):
    kind = forms.ChoiceField(choices=[("", "—"), *ContributingFactor.Kind.choices], required=False)
    description = forms.CharField(required=False, max_length=500)
    is_public = forms.BooleanField(label="Public", required=False)


FactorFormSet = forms.formset_factory(FactorForm, extra=2)


class ReportTemplateForm(forms.ModelForm):
    class Meta:
        model = ReportTemplate
        fields = [
            "name",
            "description",
            "is_default",
            "summary",
            "impact_description",
            "root_cause",
            "remediation",
            "went_well",
            "went_wrong",
            "got_lucky",
        ]
        labels = {
            "is_default": "Default for new reports",
            "impact_description": "Detailed description of impact",
            "root_cause": "Root cause",
            "remediation": "Remediation and prevention",
            "went_well": "What went well (internal)",
            "went_wrong": "What went wrong (internal)",
            "got_lucky": "Where we got lucky (internal)",
        }
        widgets = {
            name: _markdown_area(3) for name in (*ReportTemplate.SECTIONS, *ReportTemplate.REFLECTIONS)
        }

    def _get_validation_exclusions(self) -> set[str]:
        # Making this the default unmarks the other, which is the service's to do: the
        # one-default constraint (on is_default) is not a form error.
        return {*super()._get_validation_exclusions(), "is_default"}  # type: ignore[misc]
