export { openSecrets, SecretsKeyError, KEY_FILE } from './keyring.js';
export { sealer, type Secrets } from './seal.js';
