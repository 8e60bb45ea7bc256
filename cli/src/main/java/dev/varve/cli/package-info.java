/**
 * The {@code varve} command-line tool: {@code info}, {@code verify}, {@code snapshots}, {@code get}, {@code scan},
 * {@code dump}, {@code wal-dump} read a store (opened read-only, every file left byte-identical); {@code load},
 * {@code backup} and {@code salvage} write only their new directory. Built on the engine's public API and its
 * inspection tools; single-threaded, no locks of its own.
 */
package dev.varve.cli;
