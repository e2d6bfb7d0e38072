// @ts-check
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // Generated code is checked by regenerate-and-diff, not by lint.
  globalIgnores([
    '**/dist/',
    '**/node_modules/',
    'coverage/',
    '.gpux/',
    'proto/src/gen/',
    'shared/src/gen/',
  ]),
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  importX.flatConfigs.recommended,
  importX.flatConfigs.typescript,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        project: './tsconfig.eslint.json',
        tsconfigRootDir: import.meta.dirname,
      },
    },
    settings: {
      // Same tsconfig as the type-aware rules, so `@gpux/*` resolves to sources and
      // no-cycle can follow imports across packages.
      'import-x/resolver-next': [
        createTypeScriptImportResolver({ project: './tsconfig.eslint.json' }),
      ],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'separate-type-imports' },
      ],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'import-x/no-cycle': 'error',
      // TypeScript already checks these; the plugin versions only duplicate the work.
      'import-x/named': 'off',
      'import-x/namespace': 'off',
      'import-x/default': 'off',
      'import-x/no-named-as-default-member': 'off',
    },
  },
  {
    // The commands of the API (docs/cli.md) use the API alone, through the
    // client generated from docs/api/openapi.json: never the exchange's or
    // the agent's code, nor gpux's own modules that load them.
    files: ['cli/src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@gpux/exchange', '@gpux/exchange/*', '@gpux/agent', '@gpux/agent/*'],
              message: 'The API commands use the API only (cli/src/client/api.ts).',
            },
            {
              group: ['../*'],
              message:
                'The API commands import only each other and the generated API types (@gpux/shared/api).',
            },
          ],
        },
      ],
    },
  },
  {
    // The web console (docs/console.md): a browser program with its own
    // tsconfig (DOM, JSX for Preact).
    files: ['exchange/console/**/*.ts', 'exchange/console/**/*.tsx'],
    languageOptions: {
      globals: globals.browser,
      parserOptions: {
        project: './exchange/console/tsconfig.json',
        tsconfigRootDir: import.meta.dirname,
      },
    },
    settings: {
      'import-x/resolver-next': [
        createTypeScriptImportResolver({ project: './exchange/console/tsconfig.json' }),
      ],
    },
  },
  prettier,
);
