/**
 * Small shared helpers: an open-addressing {@code long}-to-{@code long} map ({@link dev.varve.core.util.LongLongMap})
 * and {@link dev.varve.core.util.StoreThreads}, which puts the store's name into the names of its threads. No locks.
 */
package dev.varve.core.util;
