declare const VAULT_BUILD: string;
