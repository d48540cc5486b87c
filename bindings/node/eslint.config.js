// ESLint (pinned in package.json / package-lock.json), run by `make lint` at the repository root.
import js from '@eslint/js';
import globals from 'globals';

export default [
  { ignores: ['node_modules/', 'build/'] },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.mjs', 'decode-chain'],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'module',
      globals: { ...globals.node },
    },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'prefer-const': 'error',
      'no-var': 'error',
    },
  },
];
