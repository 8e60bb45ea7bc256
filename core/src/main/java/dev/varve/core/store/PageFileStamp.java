package dev.varve.core.store;

/**
 * What a page file's header says of whose it is and how recent it is (see {@code PartitionFileHeader}).
 *
 * @param version    the header's format version
 * @param storeId    the store that created or last stamped the file, 0 when it does not say (a version 1 file no
 *                   checkpoint of this build wrote yet)
 * @param generation the id of the last checkpoint whose page writes reached the file, 0 when none recorded one, -1
 *                   when both slots of a version 2 header are damaged
 */
public record PageFileStamp(int version, long storeId, long generation) {
}
