# ruff: noqa: E501  (the documents keep the long lines such files have)
"""Documents a translator's tools produce, with what breaks careless handling (inline codes, whitespace,
charsets, fuzzy and approved states, nested groups, comments, CDATA), and the checks that a translated
one is the same document apart from its translations, each read by the library that reads such files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import html5lib
import lxml.html
import polib
from lxml import etree

PAGE = """<!doctype html>
<!-- a page -->
<html lang="en">
<head><meta charset="utf-8"><title>the beginning</title>
<script src="a.js"></script><style>p { color: red }</style></head>
<body>
<div class="x"></div>
<h1>in the <b>beginning</b></h1>
<p>god created <a href="/gen/1">heaven</a> &amp; earth<br>and the <span class="icon"></span> light</p>
<ul><li>the light <code>rm -rf the light</code> was good</li>
<li>press <kbd>the</kbd> and <samp>the water</samp>, or <span translate="no">The Light Co</span> night</li></ul>
loose water and <em>land</em>
<p translate="no">keep the light</p>
<div translate="no"><p>keep this too</p><p translate="yes">the day</p></div>
<pre>keep
  this</pre>
<p>
  the night
</p>
<table><tr><td>day</td><td><img src="i.png" alt="x"> night</td></tr></table>
<textarea>the text area</textarea>
<script>if (a < b) { document.write("<p>not text</p>"); }</script>
</body>
</html>
"""

# A fragment as a CMS stores one: no <html>, an empty element before the text, a script between blocks.
FRAGMENT = """<div class="x"></div>
<p>in the <span class="icon"></span> light</p>
<script src="a.js"></script>
<p>the water and <b>the land</b></p>
"""

XLIFF_1 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
 <!-- made by a CAT tool -->
 <file original="a.html" source-language="en" target-language="es" datatype="html">
  <header><note>file note</note></header>
  <body>
   <trans-unit id="1"><source>the light <ph id="1">&lt;br/&gt;</ph> and <bpt id="2">&lt;a href="x.html"&gt;</bpt>the water<ept id="2">&lt;/a&gt;</ept> <it id="3" pos="open">&lt;i&gt;</it>night</source>
    <note>a note</note></trans-unit>
   <trans-unit id="2"><source>god saw the <g id="1">light</g> was good <x id="2"/>.</source></trans-unit>
   <group id="g1" translate="no">
    <trans-unit id="3"><source>The Light Co</source></trans-unit>
    <group id="g2"><trans-unit id="4"><source>the beginning</source></trans-unit></group>
   </group>
   <trans-unit id="5" xml:space="preserve"><source>  the light
and the water  </source></trans-unit>
   <trans-unit id="6"><source><![CDATA[water & <land>]]></source></trans-unit>
   <trans-unit id="7" approved="yes"><source>the day</source><target state="final">el día</target></trans-unit>
   <trans-unit id="8"><source>the <mrk mtype="protected">Light</mrk> night</source></trans-unit>
   <trans-unit id="9"><source>in the <bx id="1" ctype="bold"/>beginning<ex id="2" rid="1"/> was</source></trans-unit>
  </body>
 </file>
</xliff>
"""

XLIFF_2 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en" trgLang="es">
 <!-- made by a CAT tool -->
 <file id="f1">
  <group id="g1" translate="no">
   <unit id="u1"><segment><source>The Light Co</source></segment></unit>
   <group id="g2"><unit id="u2"><segment><source>the beginning</source></segment></unit></group>
   <unit id="u3" translate="yes"><segment><source>the day</source></segment></unit>
  </group>
  <unit id="u4">
   <notes><note>a note</note></notes>
   <segment state="final"><source>the night</source><target>la noche</target></segment>
   <segment><source>the <mrk id="m1" translate="no">Light</mrk> was <sc id="1"/>good<ec startRef="1"/> <pc id="2">water</pc> <ph id="3"/>.</source></segment>
  </unit>
  <unit id="u5"><segment><source xml:space="preserve">  the light
and the water  </source></segment></unit>
  <unit id="u6"><segment><source><![CDATA[water & <land>]]></source></segment></unit>
 </file>
</xliff>
"""

PO = r"""# Translation of the app.
# Copyright © the authors
msgid ""
msgstr ""
"Project-Id-Version: app 1.0\n"
"Language: es\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\n"

#. a note
#: app.c:12
msgid "the night was <b>good</b>"
msgstr ""

#, c-format
msgid "Usage: %s the light\n"
msgstr ""

msgid ""
"\n"
"in the beginning\n"
"  the light  "
msgstr ""

#, c-format
msgid "%d day"
msgid_plural "%d days"
msgstr[0] ""
msgstr[1] ""

msgctxt "menu"
msgid "the water"
msgstr ""

msgid "the \"land\"\tand water"
msgstr ""

#, fuzzy
#| msgid "god made"
msgid "god created"
msgstr "dios hizo"

msgid "water and land"
msgstr "agua y tierra"

msgid "\n"
msgstr ""

#~ msgid "old"
#~ msgstr "viejo"
"""


# ------------------------------------------------------------------------------------------------- html
def html5_structure(document: str) -> list[tuple[Any, ...]]:
    """Every element as a browser's parser (html5lib) builds it: (tag, attributes, depth), in document
    order."""
    tree = html5lib.parse(document, treebuilder="lxml", namespaceHTMLElements=False)
    return _structure(tree.getroot())


def _structure(root: Any) -> list[tuple[Any, ...]]:
    return [(e.tag, tuple(sorted(e.attrib.items())), len(list(e.iterancestors())))
            for e in root.iter() if isinstance(e.tag, str)]  # fmt: skip


def html5_texts(document: str, tag: str) -> list[str]:
    """The text content of every `tag` element as html5lib parses the document."""
    tree = html5lib.parse(document, treebuilder="lxml", namespaceHTMLElements=False)
    return ["".join(e.itertext()) for e in tree.iter(tag)]


def lxml_structure(document: str) -> list[tuple[Any, ...]]:
    return _structure(lxml.html.document_fromstring(document))


# ------------------------------------------------------------------------------------------------ xliff
def _target_paths(tree: Any) -> set[str]:
    return {tree.getroottree().getpath(t) for t in tree.iter("{*}target")}


def without_new_targets(document: bytes, original: bytes) -> bytes:
    """The canonical XML (c14n, comments kept) of `document` without the targets `original` lacks."""
    tree = etree.fromstring(document)
    for target in new_targets(document, original, tree=tree).values():
        target.getparent().remove(target)
    return etree.tostring(tree, method="c14n")


def canonical(document: bytes) -> bytes:
    return etree.tostring(etree.fromstring(document), method="c14n")


def new_targets(document: bytes, original: bytes, *, tree: Any = None) -> dict[str, Any]:
    """The targets `document` has and `original` lacks, by their unit's id (2.x: the first segment
    without a target of the unit)."""
    tree = etree.fromstring(document) if tree is None else tree
    before = _target_paths(etree.fromstring(original))
    found: dict[str, Any] = {}
    for target in tree.iter("{*}target"):
        if tree.getroottree().getpath(target) not in before:
            unit = target.getparent()
            if etree.QName(unit).localname == "segment":
                unit = unit.getparent()
            found.setdefault(unit.get("id"), target)
    return found


# --------------------------------------------------------------------------------------------------- po
def msgfmt_check(path: Path) -> None:
    """`msgfmt -c` accepts the file (GNU gettext's own checks: format strings, line breaks, plurals)."""
    msgfmt = shutil.which("msgfmt")
    assert msgfmt, "msgfmt (Debian's gettext) is not installed; .ci/run installs it"
    result = subprocess.run([msgfmt, "-c", "-o", "/dev/null", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def po_entries(path_or_text: str) -> list[tuple[Any, ...]]:
    """Everything polib reads of each entry apart from its translations."""
    catalog = polib.pofile(path_or_text)
    return [
        (e.msgctxt, e.msgid, e.msgid_plural, e.comment, e.tcomment, e.occurrences, sorted(e.flags),
         e.previous_msgid, e.obsolete)
        for e in catalog
    ] + [("obsolete", e.msgid, e.msgstr) for e in catalog.obsolete_entries()]  # fmt: skip
