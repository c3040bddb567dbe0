"""The other metrics (ROUGE, embeddings, pointwise, CaseGen judge) and judge-human agreement."""
