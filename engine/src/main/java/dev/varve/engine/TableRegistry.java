package dev.varve.engine;

import dev.varve.config.ConfigLimits;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageId;
import dev.varve.core.spi.RecordTypes;
import dev.varve.core.tree.BPlusTree;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * The tables of an open store and their partitions, as the catalog holds them: lookup by name and by partition file
 * id, creation (logged through the engine's one write path), and registration when the catalog is loaded or a
 * creation is replayed.
 */
final class TableRegistry {
    /** Longest table name, UTF-8 bytes. */
    static final int MAX_TABLE_NAME_BYTES = 255;

    private final Engine engine;
    private final Map<String, TableHandle> tables = new ConcurrentHashMap<>();
    /**
     * Partitions by table id, then partition number. Every operation looks its partition up here, so it is an array
     * read without a lock or a boxed key; a registration (serial: under the catalog lock, or on the thread that loads
     * or replays) publishes a copy.
     */
    private volatile PartitionHandle[][] partitions = new PartitionHandle[0][];
    private final Object catalogLock = new Object();
    private Catalog catalog;
    private int nextTableId = 1;

    TableRegistry(Engine engine) {
        this.engine = engine;
    }

    /** Loads the catalog before replay, formatting it first in an empty store, and registers every table in it. */
    void load(boolean emptyStore) {
        if (emptyStore) Catalog.format(engine.memory);
        catalog = new Catalog(engine.memory);
        for (Catalog.Entry e : catalog.all()) tables.put(e.name(), register(e));
    }

    /** The partition with file id {@code fileId}; a WAL record naming one the catalog lacks is damage. */
    PartitionHandle partitionOf(int fileId) {
        PartitionHandle[][] byTable = partitions;
        int table = PageId.tableOf(fileId);
        int partition = PageId.partitionOf(fileId);
        PartitionHandle[] parts = table < byTable.length ? byTable[table] : null;
        PartitionHandle h = parts != null && partition < parts.length ? parts[partition] : null;
        if (h == null) throw new StorageException("WAL names partition " + PageId.tableOf(fileId) + "/" + PageId.partitionOf(fileId)
                + " of a table the catalog does not hold");
        return h;
    }

    /** Replays a creation: {@link #format}, and the table is found by name at once. */
    void applyCreate(Catalog.Entry e) {
        tables.put(e.name(), format(e));
    }

    /**
     * Adds a table to the catalog, formats its partitions' trees and registers its partitions; the caller makes the
     * returned handle findable by name.
     */
    private TableHandle format(Catalog.Entry e) {
        catalog.add(e);
        for (int p = 0; p < e.partitions(); p++) BPlusTree.format(engine.memory, PageId.fileId(e.id(), p));
        return register(e);
    }

    /** Registers the partitions of {@code e} by file id and returns its handle (not yet findable by name). */
    private TableHandle register(Catalog.Entry e) {
        PartitionHandle[] parts = new PartitionHandle[e.partitions()];
        for (int p = 0; p < parts.length; p++) {
            int fileId = PageId.fileId(e.id(), p);
            parts[p] = new PartitionHandle(fileId, p, e.name(), new BPlusTree(engine.memory.underWriterExclusion(), fileId)); // used under h.lock only
        }
        PartitionHandle[][] byTable = Arrays.copyOf(partitions, Math.max(partitions.length, e.id() + 1));
        byTable[e.id()] = parts;
        partitions = byTable;
        engine.changes.tableRegistered(e.id(), e.name());
        nextTableId = Math.max(nextTableId, e.id() + 1);
        return new TableHandle(engine, e.name(), e.options(), parts);
    }

    /** The table {@code name}, created hash-placed with the configured partition count on first use. */
    TableHandle table(String name) {
        engine.checkOpen();
        checkName(name);
        TableHandle t = tables.get(name);
        return t != null ? t : create(name, TableOptions.hashPlaced(engine.config.partitions()));
    }

    /** The table {@code name}, created with {@code options} on first use; an existing table must have been created with them. */
    TableHandle table(String name, TableOptions options) {
        engine.checkOpen();
        checkName(name);
        if (options == null) throw new IllegalArgumentException("table options are null");
        TableHandle t = tables.get(name);
        if (t == null) t = create(name, options);
        if (!t.options().equals(options))
            throw new IllegalArgumentException("table " + name + " exists as " + t.options() + "; it cannot be opened as " + options);
        return t;
    }

    /**
     * Hash-placed tables a batch creates ({@link #creating}): their catalog entries, with ids from {@code firstId} on,
     * and their handles once the batch's write formatted them.
     */
    static final class NewTables {
        static final NewTables NONE = new NewTables(List.of(), Integer.MAX_VALUE);
        final List<Catalog.Entry> entries;
        final int firstId;
        final List<TableHandle> formatted = new ArrayList<>();

        private NewTables(List<Catalog.Entry> entries, int firstId) {
            this.entries = entries;
            this.firstId = firstId;
        }

        /** Whether partition file {@code fileId} is one of these tables' (and so does not exist before the write). */
        boolean holds(int fileId) {
            return PageId.tableOf(fileId) >= firstId;
        }

        /** The entry of the new table {@code name}, or null. */
        Catalog.Entry entry(String name) {
            for (Catalog.Entry e : entries) if (e.name().equals(name)) return e;
            return null;
        }
    }

    /**
     * Runs {@code write}, a batch naming the hash-placed tables {@code names}, under the catalog lock with the ones
     * that do not exist yet given as {@link NewTables}: the write creates them ({@link #formatCreated}) only once it
     * passed every check, under its partitions' locks, so a refused batch creates none. Refuses first the tables the
     * catalog or the data region cannot take. The lock keeps any other creation out until the batch is logged: a
     * table another thread created is the batch's to use, not to create again.
     */
    <T> T creating(Collection<String> names, Function<NewTables, T> write) {
        synchronized (catalogLock) {
            List<String> fresh = names.stream().distinct().filter(n -> !tables.containsKey(n)).toList();
            for (String n : fresh) checkWellFormed(n);
            if (!fresh.isEmpty()) checkRoom(fresh.get(0), engine.config.partitions(), fresh.size());
            List<Catalog.Entry> entries = new ArrayList<>(fresh.size());
            for (String n : fresh) entries.add(new Catalog.Entry(n, nextTableId + entries.size(), TableOptions.hashPlaced(engine.config.partitions())));
            NewTables created = new NewTables(entries, nextTableId);
            try {
                return write.apply(created);
            } finally {
                // findable by name only now, after the batch was logged (see create); also when its commit failed
                for (TableHandle t : created.formatted) tables.put(t.name(), t);
            }
        }
    }

    /** Formats a table a batch creates, its creation logged; the batch makes it findable by name ({@link #creating}). */
    TableHandle formatCreated(Catalog.Entry e) {
        return format(e);
    }

    /** Refuses {@code count} new tables of {@code partitions} partitions, the first named {@code name}. Caller holds the catalog lock. */
    private void checkRoom(String name, int partitions, int count) {
        if (nextTableId + count - 1 > PageId.MAX_TABLE_ID)
            throw new IllegalStateException("the store holds the maximum of " + PageId.MAX_TABLE_ID + " tables; cannot create " + name
                    + (count > 1 ? " and " + (count - 1) + " more" : ""));
        int pages = ConfigLimits.tableCreationPages(partitions);
        if (pages > engine.memory.maxHeadroom()) throw new IllegalArgumentException("creating table " + name + " with " + partitions
                + " partitions touches ~" + pages + " pages, more than half the data region (" + engine.memory.capacityPages() + " pages); raise dataRegionSize");
    }

    /** The table {@code name} if it exists, else null. */
    TableHandle existing(String name) {
        return tables.get(name);
    }

    private TableHandle create(String name, TableOptions options) {
        if (engine.readOnly) throw new IllegalArgumentException("store " + engine.config.path() + " (opened read-only) has no table " + name);
        synchronized (catalogLock) {
            TableHandle t = tables.get(name);
            if (t != null) return t;
            checkWellFormed(name);
            checkRoom(name, options.partitions(), 1);
            int pages = ConfigLimits.tableCreationPages(options.partitions());
            Catalog.Entry e = new Catalog.Entry(name, nextTableId, options);
            TableHandle[] created = new TableHandle[1];
            try {
                engine.writePath.logged(pages, List.of(), List.of(), RecordTypes.CREATE_TABLE,
                        () -> LogicalRecords.encodeCreateTable(e.id(), options, name), () -> 0, () -> {
                            created[0] = format(e);
                            return true;
                        });
            } finally {
                // findable by name only now, after the change feed was told of the creation: a thread that found it
                // earlier could write to it, and its write be delivered, before the creation (a follower would see
                // a write to a table it does not know); until now such a thread waits here on the catalog lock.
                // Also when the commit failed: the table is in the catalog and the WAL, as before.
                if (created[0] != null) tables.put(name, created[0]);
            }
            return created[0];
        }
    }

    /** The names of the tables in the catalog, in the catalog's order (unsigned UTF-8 bytes, as a snapshot lists them). */
    List<String> names() {
        engine.checkOpen();
        List<String> names = new ArrayList<>(tables.keySet());
        names.sort((a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
        return names;
    }

    /**
     * Refuses a new table's name that is not well-formed UTF-16 (a surrogate without its pair): UTF-8 would encode it
     * as '?', the same catalog key as another name, and one table's entry would replace the other's. Checked at
     * creation only: an existing table's name passed it.
     */
    private static void checkWellFormed(String name) {
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!Character.isSurrogate(c)) continue;
            if (Character.isHighSurrogate(c) && i + 1 < name.length() && Character.isLowSurrogate(name.charAt(i + 1))) {
                i++;
                continue;
            }
            throw new IllegalArgumentException("table name holds an unpaired surrogate (U+" + Integer.toHexString(c).toUpperCase()
                    + ") at index " + i + ": it has no UTF-8 encoding");
        }
    }

    /**
     * Validates a table name: 1 to {@value #MAX_TABLE_NAME_BYTES} UTF-8 bytes. Every put checks its table's name, so a
     * name short enough to fit whatever its characters are (a UTF-16 char takes at most 3 UTF-8 bytes) is not encoded:
     * encoding it was a twentieth of what a snapshot-per-batch writer allocated.
     */
    static void checkName(String name) {
        if (name == null) throw new IllegalArgumentException("table name is null");
        if (!name.isEmpty() && name.length() <= MAX_TABLE_NAME_BYTES / 3) return;
        int len = name.getBytes(StandardCharsets.UTF_8).length;
        if (len == 0 || len > MAX_TABLE_NAME_BYTES)
            throw new IllegalArgumentException("table name must be 1.." + MAX_TABLE_NAME_BYTES + " UTF-8 bytes, was " + len);
    }
}
