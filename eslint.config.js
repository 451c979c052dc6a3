import tseslint from 'typescript-eslint';

export default tseslint.config(
  // cdk/ and examples/cdk/ need cdk/'s own packages: scripts/test.sh lints them (--no-ignore) after its npm ci.
  { ignores: ['dist/**', 'node_modules/**', '.localstack/**', 'cdk/**', 'examples/cdk/**'] },
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/it return promises that the runner itself tracks.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] }] },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
      // A leading underscore marks a parameter or a rest sibling that is deliberately unused.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true }],
    },
  },
  {
    // Test fakes implement async ports without awaiting anything; that is their point.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },
);
