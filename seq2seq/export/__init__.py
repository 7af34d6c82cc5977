"""Converters to inference engines; each refuses, by name, what its engine cannot express.

ctranslate2.py   a checkpoint -> a CTranslate2 model directory (fp32, int8, bf16), with our tokenizers
"""
