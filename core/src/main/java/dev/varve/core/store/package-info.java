/**
 * The page files on disk: one file per partition ({@code PartitionFile}, with its header), the
 * {@link dev.varve.core.store.PageStore} that reads and writes pages by id, page checksums, and the checks that tell
 * a torn or damaged page file from a sound one. Only the checkpointer writes pages (eviction drops clean pages only);
 * its threads write disjoint pages positionally, so the files need no lock of their own. Fsync is per file.
 */
package dev.varve.core.store;
