// The generic checks, in the order they run: G1–G8 first (their requests create the
// run's resources), then the rule modules of conformance/rules/, then G10 and G11, which
// look at everything created by then, and G12 and G13, whose hostile and boundary cases may
// change what they touch.
import type { RuleModule } from '../runner.js';
import g1 from './g1.js';
import g2 from './g2.js';
import g3 from './g3.js';
import g4 from './g4.js';
import g5 from './g5.js';
import g6 from './g6.js';
import g7 from './g7.js';
import g8 from './g8.js';
import g10 from './g10.js';
import g11 from './g11.js';
import g12 from './g12.js';
import g13 from './g13.js';

export const early: RuleModule[] = [g1, g2, g3, g4, g5, g6, g7, g8];
export const late: RuleModule[] = [g10, g11, g12, g13];
