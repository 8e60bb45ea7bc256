package dev.varve.snapshot;

/**
 * A declared snapshot.
 *
 * @param id             snapshot id, from 1
 * @param rank           rank level, from 1
 * @param declaredMillis wall-clock time of the declaration
 * @param start          Start(v): Maplog position of the first mapping captured for it
 * @param walLsn         LSN of its snaprec
 */
public record SnapshotRecord(long id, int rank, long declaredMillis, long start, long walLsn) {
}
