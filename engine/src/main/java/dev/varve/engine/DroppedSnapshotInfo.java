package dev.varve.engine;

import java.time.Instant;

/**
 * A snapshot the retention policy let go.
 *
 * @param id      snapshot id
 * @param dropped when it was dropped; for a drop older than the store's logs still detail (they keep the retained
 *                history), the time by which it was dropped
 * @param why     the rules of its levels (or the budget) that let it go
 */
public record DroppedSnapshotInfo(long id, Instant dropped, String why) {
}
