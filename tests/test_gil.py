"""`gil.each_offering_gil` is the list comprehension it replaces: every item, in order, once."""

from __future__ import annotations

from agent_agency.gil import each_offering_gil


def test_each_item_s_result_in_order() -> None:
    seen: list[int] = []

    def work(item: int) -> str:
        seen.append(item)
        return f"<{item}>"

    assert each_offering_gil(work, iter(range(5))) == ["<0>", "<1>", "<2>", "<3>", "<4>"]
    assert seen == [0, 1, 2, 3, 4]
    assert each_offering_gil(work, []) == []
