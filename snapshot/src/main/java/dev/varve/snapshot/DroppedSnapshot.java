package dev.varve.snapshot;

/**
 * A snapshot the retention policy let go.
 *
 * @param id            snapshot id
 * @param droppedMillis when
 * @param why           the rules of its levels that let it go
 */
public record DroppedSnapshot(long id, long droppedMillis, String why) {
}
