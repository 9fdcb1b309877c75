export const k = 1;
