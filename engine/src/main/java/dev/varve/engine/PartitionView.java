package dev.varve.engine;

/** {@link Table#partition(int)}: the table's operations on one partition. */
final class PartitionView implements Partition {
    private final Engine engine;
    private final TableHandle table;
    private final PartitionHandle handle;

    PartitionView(Engine engine, TableHandle table, PartitionHandle handle) {
        this.engine = engine;
        this.table = table;
        this.handle = handle;
    }

    @Override
    public int index() {
        return handle.index;
    }

    private PartitionHandle own(byte[] key) {
        return table.handleFor(handle.index, key);
    }

    @Override
    public void put(byte[] key, byte[] value) {
        PartitionHandle h = own(key);
        engine.checkValue(value);
        engine.write(h, key, value);
    }

    @Override
    public byte[] get(byte[] key) {
        return engine.get(own(key), key);
    }

    @Override
    public boolean remove(byte[] key) {
        return engine.write(own(key), key, null);
    }

    @Override
    public Cursor scan(byte[] fromInclusive, byte[] toExclusive) {
        engine.checkOpen();
        return new PartitionCursor(engine.scanSource(handle), fromInclusive, toExclusive);
    }

    @Override
    public long size() {
        return engine.size(handle);
    }

    @Override
    public void destroy() {
        engine.destroy(handle);
    }
}
