"""The Gradio Space: the conversion form, progress, results and browse tab."""
