package dev.varve.server;

/**
 * A small streaming JSON writer (the server's responses are flat records and arrays; no library needed). Commas are
 * placed by the writer: call {@code name(...)} before each member of an object.
 */
final class Json {
    private final StringBuilder out = new StringBuilder(1024);
    private boolean needComma;

    Json beginObject() {
        comma();
        out.append('{');
        needComma = false;
        return this;
    }

    Json endObject() {
        out.append('}');
        needComma = true;
        return this;
    }

    Json beginArray() {
        comma();
        out.append('[');
        needComma = false;
        return this;
    }

    Json endArray() {
        out.append(']');
        needComma = true;
        return this;
    }

    Json name(String name) {
        comma();
        string(name);
        out.append(':');
        needComma = false;
        return this;
    }

    Json value(String v) {
        comma();
        if (v == null) out.append("null");
        else string(v);
        needComma = true;
        return this;
    }

    Json value(long v) {
        comma();
        out.append(v);
        needComma = true;
        return this;
    }

    Json value(double v) {
        comma();
        if (Double.isNaN(v) || Double.isInfinite(v)) out.append("null");
        else out.append(v);
        needComma = true;
        return this;
    }

    Json value(boolean v) {
        comma();
        out.append(v);
        needComma = true;
        return this;
    }

    Json field(String name, String v) {
        return name(name).value(v);
    }

    Json field(String name, long v) {
        return name(name).value(v);
    }

    Json field(String name, double v) {
        return name(name).value(v);
    }

    Json field(String name, boolean v) {
        return name(name).value(v);
    }

    private void comma() {
        if (needComma) out.append(',');
    }

    private void string(String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20 || c == '<' || c == '>' || c == '&') out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        out.append('"');
    }

    @Override
    public String toString() {
        return out.toString();
    }
}
