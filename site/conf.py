"""Sphinx settings for the workbook's reference site (`make site`; see helpers/site.py).

The saved notebooks are rendered with their outputs as they are (myst-nb, no execution); the
theme and the search run from local files only, so the site works offline.
"""

project = "TensorFlow Performance Workbook"
author = "the workbook's contributors"
extensions = ["myst_nb", "sphinx_copybutton"]
root_doc = "index"
exclude_patterns = ["_build"]
nb_execution_mode = "off"  # render the saved outputs; never run a notebook here
nb_merge_streams = True
myst_heading_anchors = 3  # "### Copy this" gets an anchor a link can point at
suppress_warnings = ["myst.header", "misc.highlighting_failure"]
html_theme = "sphinx_book_theme"
html_title = "TensorFlow Performance Workbook"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "home_page_in_toc": True,
}
html_last_updated_fmt = None
copybutton_exclude = ".linenos, .gp, .go"  # copy code, not prompts or outputs
