"""Scripted audio-LLM backends for judge tests (registered in scoring.judges.audiollm.BACKENDS)."""

from __future__ import annotations

import json

import numpy as np


def answer(mq="model_a", inf="model_a", scores=(7.0, 5.0, 6.5, 4.0)) -> str:
    return json.dumps({"music_quality": mq, "instruction_following": inf, "MQ_score_a": scores[0], "MQ_score_b": scores[1], "IF_score_a": scores[2], "IF_score_b": scores[3], "reason": "r"})


class BatchedScript:
    """A backend that answers many prompts per call; the louder clip wins. Prompts whose first clip peaks above `bad_above` get prose."""

    def __init__(self, bad_above: float | None = None):
        self.calls: list[int] = []
        self.bad = bad_above

    def generate_many(self, batch, *, max_new_tokens=None):
        self.calls.append(len(batch))
        out = []
        for _, _, waves in batch:
            first, second = float(np.abs(waves[-2]).max()), float(np.abs(waves[-1]).max())
            if self.bad is not None and first > self.bad:
                out.append("I cannot decide.")
            else:
                out.append(answer("model_a", "model_a") if first > second else answer("model_b", "model_b"))
        return out
