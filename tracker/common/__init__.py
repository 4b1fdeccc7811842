"""What every stage uses: errors, atomic writes, the cache folder, shipped data files."""
