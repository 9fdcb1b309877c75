// Both sides: bundled, and served because hoster-game.json's "public" names it.
export const SIZE = 100;
