package dev.varve.engine;

import java.time.Instant;

/**
 * A live snapshot.
 *
 * @param id           snapshot id
 * @param rank         rank level (1 = lowest)
 * @param declared     when it was declared
 * @param archiveBytes archive bytes attributed to it: the pre-states first captured for it as they are stored (a whole
 *                     page with its record header, or a diff's share of its pack, the pack's headers and unused tail
 *                     going with its first and last diffs) with their level-1 mappings, and its ranked extent. The live
 *                     snapshots' figures add up to at most {@link VarveMetrics#archiveBytes()}: the Skippy levels,
 *                     the higher levels' mappings and what dropped snapshots leave until reclamation are no live
 *                     snapshot's. The same after a restart
 */
public record SnapshotInfo(long id, int rank, Instant declared, long archiveBytes) {
}
