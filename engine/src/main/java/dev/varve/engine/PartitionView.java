package dev.varve.engine;

/** {@link Table#partition(int)}: the table's operations on one partition. */
final class PartitionView extends RoutedOperations implements Partition {
    private final TableHandle table;
    private final PartitionHandle handle;

    PartitionView(Engine engine, TableHandle table, PartitionHandle handle) {
        super(engine);
        this.table = table;
        this.handle = handle;
    }

    @Override
    public int index() {
        return handle.index;
    }

    @Override
    PartitionHandle route(byte[] key) {
        return table.handleFor(handle.index, key);
    }

    @Override
    public Cursor scan(byte[] fromInclusive, byte[] toExclusive) {
        engine.checkOpen();
        return new PartitionCursor(engine.scanSource(handle), engine::checkOpen, fromInclusive, toExclusive);
    }

    @Override
    public long size() {
        return engine.size(handle);
    }

    @Override
    public void destroy() {
        engine.writePath.destroy(handle);
    }
}
