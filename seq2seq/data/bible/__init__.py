"""The embedded Bible corpus (seq2seq-prepare data=bible_en_es): two translations, verse-aligned.

Specific to this one corpus; the rest of seq2seq.data reads any parallel text. One concept per module:

sword.py         read the verses of installed SWORD modules with diatheke
markup.py        SWORD verse markup -> clean plain text
alignment.py     monotone alignment of two verse sequences by length and shared Strong's numbers
prepare.py       prepare_bible: export, align, split by chapter, write the corpus files
"""
