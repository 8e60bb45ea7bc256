package dev.varve.snapshot;

/**
 * A snapshot the retention policy let go.
 *
 * @param id            snapshot id
 * @param droppedMillis when; or, when {@code byThen}, a time by which it was dropped (its record was compacted away)
 * @param why           the rules of its levels that let it go
 * @param byThen        whether {@code droppedMillis} only bounds the drop's time
 */
public record DroppedSnapshot(long id, long droppedMillis, String why, boolean byThen) {
    /** A drop whose time is known. */
    public DroppedSnapshot(long id, long droppedMillis, String why) {
        this(id, droppedMillis, why, false);
    }
}
