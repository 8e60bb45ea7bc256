/**
 * The runnable benchmarks of {@code varve-benchmarks.jar} ({@link dev.varve.benchmarks.Main} picks the job): JMH
 * micro-benchmarks of the put/get hot path, recovery-mode and retention comparisons, snapshot costs, and comparisons
 * with peer stores (H2, Ignite, Infinispan's own stores) run in child JVMs. Speed targets live here, never in unit
 * tests. No locks of its own.
 */
package dev.varve.benchmarks;
