package dev.varve.engine;

import java.time.Instant;

/**
 * A live snapshot.
 *
 * @param id           snapshot id
 * @param rank         rank level (1 = lowest)
 * @param declared     when it was declared
 * @param archiveBytes archive bytes it holds
 */
public record SnapshotInfo(long id, int rank, Instant declared, long archiveBytes) {
}
