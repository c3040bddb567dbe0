"""What the release supports: reconstruction, results, REPRODUCTION.md, figures, the explorer, replay."""
