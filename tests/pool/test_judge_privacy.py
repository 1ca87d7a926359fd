"""(for the lead) A judge's free text is anonymized and checked like every other free text."""

from __future__ import annotations

from pool_records import make_records, make_task

from agent_agency.data_point import DataPoint
from agent_agency.pool.anonymize import Anonymizer
from agent_agency.pool.assemble import build_data_point
from agent_agency.pool.point_fields import free_text_fields, free_texts
from agent_agency.pool.validation import string_reasons
from agent_agency.privacy.settings import AnonymizationPolicy
from agent_agency.records import JudgeVerdict


def point_judged(*verdicts: JudgeVerdict) -> DataPoint:
    decision, execution, evaluations = make_records("t1")
    evaluation = evaluations[-1].model_copy(update={"judges": list(verdicts)})
    return build_data_point(make_task("t1"), decision, execution, [evaluation])


def test_a_judges_rationale_and_error_are_anonymized_and_checked() -> None:
    point = point_judged(
        JudgeVerdict(judge="tone", score=0.2, rationale="it names ana.lopez@corp.example.org"),
        JudgeVerdict(judge="style", error="unreadable reply: 'mail ana.lopez@corp.example.org'"),
    )
    assert free_texts(point) == [value for _, value in free_text_fields(point)]
    assert any("evaluation.judges.0.rationale" in r for r in string_reasons(point))
    clean = Anonymizer(AnonymizationPolicy(), b"secret").anonymize(point)
    assert "ana.lopez" not in clean.model_dump_json()
    assert string_reasons(clean) == []
