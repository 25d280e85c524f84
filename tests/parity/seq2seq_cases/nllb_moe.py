from tests.parity.seq2seq_cases import Seq2SeqCase
from tests.parity.seq2seq_cases.bart import BART_SIZES

# layer 1 of each stack a 4-expert top-2 MoE (step 2), left padding (the encoder's routers
# skip it); the default capacity (the call's token count) keeps every pick
NLLB_MOE = {
    **BART_SIZES,
    "model_type": "nllb-moe",
    "num_experts": 4,
    "encoder_sparse_step": 2,
    "decoder_sparse_step": 2,
}
CASES = {
    "nllb-moe": Seq2SeqCase(NLLB_MOE, inputs="text-left-padded"),
    # a quarter of the 18 tokens per expert (5) drops picks of the 14 real tokens, the most
    # probable routed first, weights normalized before the drops; the decoder dense, as one
    # teacher-forced call and cached steps would drop differently
    "nllb-moe:capacity": Seq2SeqCase(
        {
            **NLLB_MOE,
            "decoder_sparse_step": 0,
            "moe_eval_capacity_token_fraction": 0.25,
            "batch_prioritized_routing": True,
            "normalize_router_prob_before_dropping": True,
            "router_bias": True,
        },
        inputs="text-left-padded",
    ),
}
