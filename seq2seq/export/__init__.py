"""Converters to inference engines; each refuses, by name, what its engine cannot express.

ctranslate2.py   a checkpoint -> a CTranslate2 model directory (fp32, int8, bf16), with our tokenizers: an
                 encoder-decoder as a TransformerSpec (ctranslate2.Translator), a causal decoder-only
                 model as a TransformerDecoderModelSpec (ctranslate2.Generator)
"""
