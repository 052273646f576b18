"""Request slots as vLLM 0.33.0 assigns them: the real ``GPUModelRunner.finish_requests`` (which frees
finished and preempted requests in ``sorted(req_id)`` order, "so every TP rank frees request slots in
the same order") and ``RequestState.add_request`` / ``remove_request`` (``free_indices.pop()`` /
``append``). The slot is a request's persistent block-table row, so the conformance suite gathers
with these slots instead of the lab's, and compares the lab's with them (R6)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


class VllmRequestSlots:
    def __init__(self, V, max_num_reqs: int, num_speculative_tokens: int):
        from vllm.v1.worker.gpu.states import RequestState

        # Only the slots are read: a 2-token max_model_len keeps all_token_ids tiny.
        self.req_states = RequestState(max_num_reqs, 2, 2, num_speculative_tokens, 1, V.torch.device("cpu"))
        r = self.runner = object.__new__(V.model_runner.GPUModelRunner)
        r.req_states = self.req_states
        r.pooling_runner = r.pp_handler = r.encoder_cache = r.prompt_logprobs_worker = None
        r.model_state = r.lora_state = SimpleNamespace(remove_request=lambda req_id: None)
        self.req_id: dict[int, str] = {}  # the lab's instance -> vLLM request id

    def apply(self, slot_ops: list, step: int, cmp) -> None:
        """Replay a step's removals (through vLLM's ``finish_requests``) and additions; compare slots."""
        finished = {self.req_id.pop(op[1]) for op in slot_ops if op[0] == "remove"}
        self.runner.finish_requests(SimpleNamespace(finished_req_ids=finished, preempted_req_ids=set()))
        for op in slot_ops:
            if op[0] == "add":
                _, inst, req_num, lab_slot = op
                req_id = self.req_id[inst] = f"req-{req_num}"
                self.req_states.add_request(req_id, 1, [0], 0, 1)
                cmp.check(step, "R6", "request slot (RequestState.add_request)", lab_slot, self.slot(inst))

    def slot(self, inst: int) -> int:
        return self.req_states.req_id_to_index[self.req_id[inst]]

    def idx_mapping(self, batch_inst: np.ndarray) -> np.ndarray:
        return np.array([self.slot(int(i)) for i in batch_inst], dtype=np.int32)
