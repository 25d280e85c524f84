"""config.json -> ArchitectureConfig: the reader (typed keys, defaults), the family rules, rope."""

from converter.config.architecture import (
    LAYOUTS,
    ArchitectureConfig,
    ConfigRules,
    MultiHeadRules,
    extend,
)
from converter.config.reader import (
    GENERATION_CONFIG,
    TOKEN_KEYS,
    ConfigReader,
    check_generation_config,
    config_defaults,
    model_type_of,
    text_config,
    token_ids,
)
from converter.config.rope import FULL, SLIDING, Rope, parse_local_rope, parse_rope

__all__ = [
    "FULL",
    "GENERATION_CONFIG",
    "LAYOUTS",
    "SLIDING",
    "TOKEN_KEYS",
    "ArchitectureConfig",
    "ConfigReader",
    "ConfigRules",
    "MultiHeadRules",
    "Rope",
    "check_generation_config",
    "config_defaults",
    "extend",
    "model_type_of",
    "parse_local_rope",
    "parse_rope",
    "text_config",
    "token_ids",
]
