import type { OrderRec } from './order-rec.js';
import type { Plan } from './plan.js';

/** Larger than any amount of nodes. */
const NONE = 0x7fffffff;

/**
 * Chooses a buy's fills when all-or-nothing asks (D27) may be among them
 * (docs/matching.md, "Choosing the fills"). The book pushes the asks the buy
 * may take, in ask priority, each with the nodes it can give; `best()` is the
 * most the buy can reach (at most `need`), `reachable(x)` says whether x can
 * be reached exactly, and `planTo(x)` writes the plan for x: in priority, from
 * each ask as much as still lets the asks after it make up the rest.
 *
 * The amounts reachable with the all-or-nothing candidates j, j+1, … form a
 * bitset G_j over 0…need (subset sums); the divisible candidates add any
 * amount up to their total. So the amounts reachable with the candidates
 * after position i are G_j ⊕ [0, D], where j is the first all-or-nothing
 * candidate after i and D the divisible nodes after i. Cost: O(k × need / 32)
 * time and memory for k all-or-nothing candidates; none without them.
 *
 * Scratch, reused for every walk: it allocates only when the bitsets grow.
 */
export class FillPlanner {
  private readonly orders: OrderRec[] = [];
  private readonly avail: number[] = [];
  private readonly whole: boolean[] = [];
  private len = 0;
  private need = 0;
  /** Divisible nodes of all candidates, and since the last all-or-nothing one. */
  private divisible = 0;
  private tail = 0;
  /** All-or-nothing candidates (k). */
  private aon = 0;
  /** 32-bit words per bitset. */
  private words = 0;
  private bits = new Uint32Array(256);

  /** Start a list of candidates for a buy that needs at most `need` nodes. */
  reset(need: number): void {
    this.len = 0;
    this.need = need;
    this.divisible = 0;
    this.tail = 0;
    this.aon = 0;
  }

  /**
   * The next candidate in ask priority, which can give `avail` nodes (> 0).
   * Returns false once more candidates cannot change anything: the divisible
   * nodes after the last all-or-nothing candidate cover `need`, so every
   * amount up to it is reachable from any point of the list on, and the plan
   * never gets past them.
   */
  push(o: OrderRec, avail: number): boolean {
    // One node is all or nothing anyway: count it as divisible.
    const whole = o.allOrNothing && avail > 1;
    if (whole) {
      // Larger than the whole need: never part of a plan.
      if (avail > this.need) return true;
      this.aon++;
      this.tail = 0;
    } else {
      this.divisible += avail;
      this.tail += avail;
    }
    const i = this.len++;
    if (i < this.orders.length) {
      this.orders[i] = o;
      this.avail[i] = avail;
      this.whole[i] = whole;
    } else {
      this.orders.push(o);
      this.avail.push(avail);
      this.whole.push(whole);
    }
    return this.tail < this.need;
  }

  /** Builds the subset-sum bitsets; call once the candidates are pushed. */
  prepare(): void {
    const k = this.aon;
    if (k === 0) return;
    const need = this.need;
    const words = (this.words = (need >>> 5) + 1);
    const size = (k + 1) * words;
    if (this.bits.length < size) this.bits = new Uint32Array(Math.max(size, 2 * this.bits.length));
    const bits = this.bits;
    // G_k = {0}
    const last = k * words;
    bits.fill(0, last, last + words);
    bits[last] = 1;
    const topMask = 0xffffffff >>> (31 - (need & 31));
    let j = k;
    for (let i = this.len - 1; i >= 0; i--) {
      if (!this.whole[i]) continue;
      // G_{j-1} = G_j ∪ (G_j + a), cut at need
      const a = this.avail[i]!;
      const src = j * words;
      const dst = --j * words;
      const q = a >>> 5;
      const r = a & 31;
      for (let w = 0; w < words; w++) {
        let v = bits[src + w]!;
        const sw = w - q;
        if (sw >= 0) {
          if (r === 0) v |= bits[src + sw]!;
          else {
            v |= bits[src + sw]! << r;
            if (sw > 0) v |= bits[src + sw - 1]! >>> (32 - r);
          }
        }
        bits[dst + w] = v;
      }
      bits[dst + words - 1] = bits[dst + words - 1]! & topMask;
    }
  }

  /** The most nodes a selection of the candidates reaches, at most `need`. */
  best(): number {
    const d = this.divisible;
    const need = this.need;
    if (this.aon === 0) return d < need ? d : need;
    const bits = this.bits;
    let top = 0;
    for (let w = this.words - 1; w >= 0; w--) {
      const v = bits[w]!;
      if (v !== 0) {
        top = (w << 5) + 31 - Math.clz32(v);
        break;
      }
    }
    return top + d < need ? top + d : need;
  }

  /** Can a selection of the candidates reach exactly x (≤ need)? */
  reachable(x: number): boolean {
    const d = this.divisible;
    if (this.aon === 0) return x <= d;
    return this.nextBit(0, x > d ? x - d : 0) <= x;
  }

  /**
   * Appends to `plan` the plan for x, which must be reachable: the candidates
   * in priority, from each the most that leaves a rest the candidates after
   * it can reach.
   */
  planTo(x: number, plan: Plan): void {
    let left = x;
    let d = this.divisible;
    let j = 0;
    const greedy = this.aon === 0;
    for (let i = 0; i < this.len && left > 0; i++) {
      const o = this.orders[i]!;
      const v = this.avail[i]!;
      if (this.whole[i]) {
        // G_j: what the all-or-nothing candidates after this one reach
        j++;
        if (v <= left) {
          const rest = left - v;
          if (this.nextBit(j, rest > d ? rest - d : 0) <= rest) {
            plan.push(o, v);
            left = rest;
          }
        }
        continue;
      }
      d -= v;
      const most = v < left ? v : left;
      // The smallest rest ≥ left − most that the candidates after this one reach.
      let rest = left - most;
      if (!greedy) {
        const s = this.nextBit(j, rest > d ? rest - d : 0);
        if (s > rest) rest = s;
      }
      if (rest < left) {
        plan.push(o, left - rest);
        left = rest;
      }
    }
    if (left !== 0) throw new Error(`FillPlanner: ${x} nodes are not reachable`);
  }

  /** The smallest amount ≥ from in G_j, or NONE. */
  private nextBit(j: number, from: number): number {
    const words = this.words;
    let w = from >>> 5;
    if (w >= words) return NONE;
    const base = j * words;
    const bits = this.bits;
    let v = bits[base + w]! & (0xffffffff << (from & 31));
    while (v === 0) {
      if (++w >= words) return NONE;
      v = bits[base + w]!;
    }
    return (w << 5) + 31 - Math.clz32(v & -v);
  }
}
