"""sglang-tracker: the speculative-decoding interface SGLang expects of model classes."""

__version__ = "0.1.0"
