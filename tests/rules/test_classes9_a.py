"""Round nine's cases (tests/data/classes9/c9a_*): start-ups that stop with nothing after them. A tqdm bar drawn at
its start with no total ("0it [00:00, ?it/s]") after NCCL's init, and a serving framework's log ending at a step of
its distributed set-up, are possible hangs; the same lines followed by counting or the server's ready lines are not.
A process that states its own rank as it joins (vLLM's driver, untagged) has output of that rank."""
from __future__ import annotations

import pytest
from class_cases import CaseSet
from wild_cases import DATA

SET = CaseSet(DATA / "classes9")
MINE = SET.names("c9a_")


@pytest.mark.parametrize("name", MINE)
def test_class_case(name):
    SET.check(name)


@pytest.mark.parametrize("line,frozen", [
    ("Sanity Checking: 0it [00:00, ?it/s]", True), ("Validation DataLoader 0: 0it [00:00, ?it/s]", True),
    ("Epoch 0:   0%|          | 0/500 [00:00<?, ?it/s]", True),
    ("Training: 10it [00:02,  4.1it/s]", False), ("Epoch 0:   2%|▏         | 10/500 [00:02<01:40,  4.9it/s]", False),
])
def test_a_bar_at_its_start_with_or_without_a_total(line, frozen):
    from ncclscope.rules.hang import ZERO_BAR_RE

    assert bool(ZERO_BAR_RE.search(line)) is frozen


def test_an_untagged_process_stating_its_rank_has_input_of_that_rank():
    from ncclscope.sources.ray_workers import stated_rank

    assert stated_rank("parallel_state.py:942] world_size=4 rank=0 local_rank=0 distributed_init_method=tcp://"
                            "127.0.0.1:5000 backend=nccl") == 0
    assert stated_rank("Setting up process group for: env:// [rank=3, world_size=4]") == 3
    assert stated_rank("rank=3 world_size=4") is None
