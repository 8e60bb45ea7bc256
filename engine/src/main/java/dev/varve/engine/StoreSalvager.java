package dev.varve.engine;

import dev.varve.checkpoint.CheckpointMarkers;
import dev.varve.config.VarveConfig;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;
import dev.varve.core.store.PageStore;
import dev.varve.core.tree.LeafSalvage;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Copies what can still be read out of a damaged store (operator tools), never writing to it. If the store opens
 * read-only (recovered in memory), every partition is scanned; a partition whose scan hits a bad page is finished
 * from its page file by {@link LeafSalvage} (keys after the last one scanned). If damage keeps it from opening (a
 * store open for writing elsewhere is refused instead), every partition is salvaged from its page file, with table
 * names from the catalog's leaves, once the pages of a checkpoint the crash interrupted were put back from its
 * recovery files as recovery would ({@link InterruptedCheckpointRestore}, in memory); writes after the last
 * checkpoint's mark are then lost, which the result says when the WAL holds any. Tables whose names were in a part
 * of the catalog that is lost are salvaged under placeholder names ({@link #UNNAMED} and the table id), and a
 * partition whose page file is missing is reported lost.
 */
public final class StoreSalvager {
    /** Receives the salvaged tables and entries, and each loss. */
    public interface Sink {
        /** A table and how it places keys, before its entries. */
        void table(String name, TableOptions options);

        /** An intact entry, found in partition {@code partition} of {@code table}. */
        void entry(String table, int partition, byte[] key, byte[] value);

        /** Something lost: where, and what. */
        void lost(Path file, long offset, String what);
    }

    /** The name a table whose name was in the lost part of the catalog is salvaged under, with its table id after it. */
    public static final String UNNAMED = "table-";

    /** Whether the store opened (so writes after the last checkpoint are in), and why not. */
    public record Result(boolean opened, String openFailure) {
    }

    private StoreSalvager() {
    }

    /**
     * Salvages the store of {@code config} into {@code sink}.
     *
     * @throws IllegalStateException when the store is open for writing in another process (or holds an unfinished
     *                               transfer): that is no damage, and its page files are being rewritten under a copy
     */
    public static Result salvage(VarveConfig config, Sink sink) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        if (sink == null) throw new IllegalArgumentException("sink must not be null");
        Varve store;
        try {
            store = Varve.openReadOnly(config);
        } catch (IllegalStateException e) {
            throw e;
        } catch (RuntimeException e) {
            int restored = fromPageFiles(config, sink);
            walTailLost(config, restored, sink);
            return new Result(false, e.getMessage());
        }
        try (store) {
            Engine e = store.engine();
            for (String name : store.tables()) {
                Table t = store.table(name);
                sink.table(name, t.options());
                for (int p = 0; p < t.partitions(); p++) scanOrSalvage(store, e, name, t.partition(p), sink);
            }
        }
        return new Result(true, null);
    }

    private static void scanOrSalvage(Varve store, Engine e, String table, Partition partition, Sink sink) {
        byte[] last = null;
        try (Cursor c = partition.scan(null, null)) {
            while (c.next()) {
                sink.entry(table, partition.index(), c.key(), c.value());
                last = c.key();
            }
            return;
        } catch (RuntimeException x) {
            int fileId = ((TableHandle) store.table(table)).handles()[partition.index()].fileId;
            sink.lost(e.store.pathOf(fileId), 0, "scan of " + table + " partition " + partition.index() + " failed (" + x.getMessage()
                    + "); the rest is salvaged from the page file as of the last checkpoint");
            byte[] after = last;
            salvageFile(e.store, fileId, table, after, sink);
        }
    }

    /**
     * Says what of the WAL a salvage from the page files leaves out: without an open nothing replays it, and the page
     * files hold the last checkpoint. Only records that write (from where recovery would read) are lost; a WAL holding
     * none there — a store closed cleanly holds at most the next checkpoint's start — loses nothing, and saying it did
     * made a salvage that lost nothing report a loss.
     */
    private static void walTailLost(VarveConfig config, int restored, Sink sink) {
        String lost;
        try {
            long lsn = WalInspector.firstWriteRecoveryApplies(config);
            if (lsn < 0) return;
            lost = "writes logged after the last checkpoint (from LSN " + lsn + " on)";
        } catch (RuntimeException x) { // the WAL itself unreadable there: what it held after the checkpoint cannot be told, so it is counted lost
            lost = "writes logged after the last checkpoint, if any (the WAL could not be read: " + x.getMessage() + ")";
        }
        sink.lost(config.path().resolve("wal"), 0, lost + ": the store did not open, so its WAL was not replayed and only the page files (the state "
                + "of the last checkpoint" + (restored == 0 ? "" : ", which the crash interrupted while it wrote pages: its " + restored
                + " page images were restored from its recovery files") + ") were salvaged");
    }

    /** Salvages every partition from its page file; returns how many pages of an interrupted checkpoint were restored first. */
    private static int fromPageFiles(VarveConfig config, Sink sink) {
        MemoryOverlayIO io = new MemoryOverlayIO(); // the restore's page writes land in memory: the source is never written
        try (PageStore pages = new PageStore(io, config.path().resolve("pages"), config.pageSize())) {
            // first, as recovery would: the pages a checkpoint interrupted by the crash was writing may be half-updated
            int restored = InterruptedCheckpointRestore.apply(new CheckpointMarkers(io, config.path().resolve("checkpoints")), pages, sink);
            Set<String> names = new HashSet<>();
            Set<Integer> named = fromCatalog(pages, sink, names);
            unnamedTables(pages, named, names, sink);
            return restored;
        }
    }

    /**
     * Salvages the tables the catalog's intact leaves name, each partition from its page file; returns their table
     * ids, and adds their names to {@code names}. A catalog that is missing, or whose file cannot be read as a page
     * file, is reported lost: the tables it named are then salvaged by {@link #unnamedTables}.
     */
    private static Set<Integer> fromCatalog(PageStore pages, Sink sink, Set<String> names) {
        Set<Integer> named = new HashSet<>();
        Path catalog = pages.pathOf(Catalog.FILE_ID);
        String unnamed = "the names of the tables it listed are lost; their page files are salvaged under placeholder names (" + UNNAMED + "<table id>)";
        if (!pages.exists(Catalog.FILE_ID)) {
            sink.lost(catalog, 0, "catalog page file is missing: " + unnamed);
            return named;
        }
        try {
            LeafSalvage.salvage(pages, Catalog.FILE_ID, new LeafSalvage.Sink() {
                @Override
                public void entry(byte[] key, byte[] value) {
                    Catalog.Entry t = Catalog.decode(new String(key, StandardCharsets.UTF_8), value);
                    named.add(t.id());
                    names.add(t.name());
                    sink.table(t.name(), t.options());
                    for (int p = 0; p < t.partitions(); p++) salvageFile(pages, PageId.fileId(t.id(), p), t.name(), null, sink);
                }

                @Override
                public void lost(long pageId, byte[] key, String why) {
                    sink.lost(catalog, pages.offsetOf(pageId), "catalog page: " + unnamed + ": " + why);
                }
            });
        } catch (StorageException x) { // its header: the catalog cannot be read as a page file
            sink.lost(catalog, x instanceof CorruptionException c ? c.offset() : 0, "catalog page file unreadable (" + x.getMessage() + "): " + unnamed);
        }
        return named;
    }

    /**
     * Salvages the page files of tables no intact catalog leaf named (their names were in the part of the catalog that
     * is lost) under placeholder names, rather than leaving their entries behind with the catalog. Whether such a table
     * placed keys by hash or by the caller is not known either: it is made caller-placed with as many partitions as
     * its highest page file says, and each entry goes back into the partition it was found in.
     */
    private static void unnamedTables(PageStore pages, Set<Integer> named, Set<String> names, Sink sink) {
        TreeMap<Integer, Integer> partitions = new TreeMap<>(); // table id -> partitions its page files show
        for (int fileId : pages.fileIds()) {
            int table = PageId.tableOf(fileId);
            if (table != PageId.tableOf(Catalog.FILE_ID) && !named.contains(table)) partitions.merge(table, PageId.partitionOf(fileId) + 1, Math::max);
        }
        for (Map.Entry<Integer, Integer> t : partitions.entrySet()) {
            String name = UNNAMED + t.getKey();
            while (!names.add(name)) name = name + "_"; // a table the catalog does name may have the placeholder's name
            sink.table(name, TableOptions.callerPlaced(t.getValue()));
            for (int p = 0; p < t.getValue(); p++) salvageFile(pages, PageId.fileId(t.getKey(), p), name, null, sink);
        }
    }

    /** Salvages one partition file, keeping only keys after {@code after} (null: all). */
    private static void salvageFile(PageStore pages, int fileId, String table, byte[] after, Sink sink) {
        if (!pages.exists(fileId)) {
            // a table's every partition has its page file from the checkpoint that wrote the table's catalog entry on
            sink.lost(pages.pathOf(fileId), 0, "page file is missing: every entry of " + table + " partition " + PageId.partitionOf(fileId)
                    + " is lost");
            return;
        }
        try {
            salvageChecked(pages, fileId, table, after, sink);
        } catch (StorageException x) { // its header: the file cannot be read as a page file
            sink.lost(pages.pathOf(fileId), x instanceof CorruptionException c ? c.offset() : 0, "page file unreadable, every entry of "
                    + table + " partition " + PageId.partitionOf(fileId) + " in it is lost: " + x.getMessage());
        }
    }

    private static void salvageChecked(PageStore pages, int fileId, String table, byte[] after, Sink sink) {
        LeafSalvage.salvage(pages, fileId, new LeafSalvage.Sink() {
            @Override
            public void entry(byte[] key, byte[] value) {
                if (after == null || Arrays.compareUnsigned(key, after) > 0) sink.entry(table, PageId.partitionOf(fileId), key, value);
            }

            @Override
            public void lost(long pageId, byte[] key, String why) {
                sink.lost(pages.pathOf(fileId), pages.offsetOf(pageId), (key == null ? "page and its entries lost: " : "value of one key lost: ") + why);
            }
        });
    }
}
