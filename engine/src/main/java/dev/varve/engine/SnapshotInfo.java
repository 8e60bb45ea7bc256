package dev.varve.engine;

import java.time.Instant;

/**
 * A live snapshot.
 *
 * @param id           snapshot id
 * @param rank         rank level (1 = lowest)
 * @param declared     when it was declared
 * @param archiveBytes archive bytes attributed to it: the pre-states first captured for it, each counted as a whole
 *                     page with its record header and mapping, and its ranked extent. An upper bound: diff capture
 *                     (the default {@code snapshotDiffChain}) stores most pre-states after the first as diffs of a
 *                     few chunks, so with frequent snapshots the live snapshots' figures can add up to several times
 *                     {@link VarveMetrics#archiveBytes()} (6x for 100-byte updates to a tenth of the keys per snapshot)
 */
public record SnapshotInfo(long id, int rank, Instant declared, long archiveBytes) {
}
