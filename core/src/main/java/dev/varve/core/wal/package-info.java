/**
 * The write-ahead log: segment files of CRC-checked records ({@link dev.varve.core.wal.WalSegmentDescriptor} draws the
 * layout), appending with group commit and the three sync modes ({@link dev.varve.core.wal.Wal}), the open scan
 * that tells a torn tail (cut) from damage (refused) by the sync mode that wrote each segment
 * ({@link dev.varve.core.wal.WalOpenScan}, {@link dev.varve.core.wal.WalOpenSwitch}), reading for recovery,
 * and the background flusher agent of {@code BACKGROUND} mode.
 *
 * <p>Locks, in the global order (see {@code dev.varve.engine}): the append lock, then the force lock, both below the
 * page latches (the physical page log appends while a page is write-latched); segment deletion has its own monitor,
 * taken alone.
 */
package dev.varve.core.wal;
