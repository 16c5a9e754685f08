"""TileFoundry: static analysis of tile-level tensor programs."""
