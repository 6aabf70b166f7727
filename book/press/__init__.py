"""The press: the Sphinx extensions and editions that make the book from its chapters.

Not part of attnlib (a reader imports attnlib; only the book's build and tests import the press). Each
module is one job; ``_config.yml`` loads the extensions by name (``press.quiz``, ``press.lean_pages``…),
and ``python -m press.notebook_edition``, ``press.student`` and ``press.print_pdf`` write the editions.
"""
