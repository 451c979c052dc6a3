/**
 * The import rule of src/ (CONTRIBUTING.md, "The import rule"): each layer imports only the layers below it.
 *
 *   util <- core <- receive <- invoke <- settle <- dispatch <- config, aws, operator, temporal, fleet <- check, daemon, migrate <- main
 *
 * The steps follow a message's path: a step imports only the steps before it (settle/ may import invoke/ and
 * receive/, invoke/ may import receive/, receive/ neither); a step that needs an object of a later one declares
 * the narrow view it reads (invoke/invoke.ts's InvokeLease). Beside each other, config/ imports neither aws/ nor
 * operator/, and aws/ and operator/ do not import each other (adapters-apart). fleet/ is a wing beside temporal/, but
 * pure (fleet-pure): its placement, membership and budget share import only core/ and util/, and what the fleet
 * needs of the store comes in through ports that aws/ implements and daemon/ hands over.
 *
 * `npm run check` and scripts/test.sh run it (`npm run deps`); a wrong import fails with the rule's name.
 */
const LAYERS = [
  ['util'],
  ['core'],
  ['receive'],
  ['invoke'],
  ['settle'],
  ['dispatch'],
  ['config', 'aws', 'operator', 'temporal', 'fleet'],
  ['check', 'daemon', 'migrate'],
];

/** The folders a layer may not import: every folder of the layers above it. */
function above(index) {
  return LAYERS.slice(index + 1).flat();
}

const folder = (names) => `^src/(${names.join('|')})/`;

/** How a message names a layer's folders: src/settle/, src/{check,daemon,migrate}/. */
const shown = (names) => (names.length === 1 ? `src/${names[0]}/` : `src/{${names.join(',')}}/`);

module.exports = {
  forbidden: [
    ...LAYERS.flatMap((layer, i) =>
      i === LAYERS.length - 1
        ? []
        : [
            {
              name: `layer-${layer.join('-')}`,
              comment: `${shown(layer)} import only the layers below them: ${above(i).join(', ')} and src/main.ts are above (CONTRIBUTING.md, "The import rule")`,
              severity: 'error',
              from: { path: folder(layer) },
              to: { path: [folder(above(i)), '^src/[^/]+\\.ts$'] },
            },
          ],
    ),
    {
      name: 'layer-check-daemon',
      comment: 'src/check/, src/daemon/ and src/migrate/ never import src/main.ts (CONTRIBUTING.md, "The import rule")',
      severity: 'error',
      from: { path: folder(LAYERS[LAYERS.length - 1]) },
      to: { path: '^src/[^/]+\\.ts$' },
    },
    {
      name: 'adapters-apart',
      comment:
        'config/ imports neither aws/ nor operator/ (both read its Config), and aws/ and operator/ do not import each other: a port they share lives in core/ (core/telemetry/metrics-publisher.ts) (CONTRIBUTING.md, "The import rule")',
      severity: 'error',
      from: { path: '^src/(config|aws|operator)/' },
      to: { path: '^src/(aws|operator)/', pathNot: '^src/$1/' },
    },
    {
      name: 'fleet-pure',
      comment:
        'src/fleet/ imports only src/core/ and src/util/: placement, membership and the budget share are pure, and the store reaches them through ports that aws/ implements (CONTRIBUTING.md, "The import rule")',
      severity: 'error',
      from: { path: '^src/fleet/' },
      to: { path: '^src/', pathNot: '^src/(fleet|core|util)/' },
    },
    {
      name: 'no-circular',
      comment: 'no import circles in src/, not even through types: a type the orchestrator and its parts share lives below both',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
