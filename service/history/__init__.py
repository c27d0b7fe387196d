"""Flow history (issue 35): every deploy's flows kept deduplicated per node, diffs between any two points, and the
tools and routes that read and restore them."""
