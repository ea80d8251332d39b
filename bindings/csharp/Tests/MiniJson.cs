// A small JSON reader and writer for the tests: Mono's base assemblies, which these tests
// limit themselves to, have none. Objects are Dictionary<string, object>, arrays
// List<object>, numbers long (or double with a fraction or exponent), then string, bool, null.
// KeyPaths gives the order the text writes the keys in, which a Dictionary does not promise.
using System;
using System.Collections.Generic;
using System.Globalization;
using System.Text;

namespace Parley.Tests
{
    internal sealed class MiniJson
    {
        private readonly string _s;
        private int _i;
        private List<string> _keyPaths;  // for KeyPaths: each member's pointer, in text order

        private MiniJson(string s) { _s = s; }

        // Throws FormatException for anything that is not one whole JSON value.
        public static object Parse(string text)
        {
            var p = new MiniJson(text);
            object value = p.Value("");
            p.Space();
            if (p._i != p._s.Length) throw p.Error("text after the value");
            return value;
        }

        // The JSON pointer of every object member in `text`, one whole JSON value, in the
        // order the text writes them: "/a", "/a/b", "/a/b/0/c" and so on. Throws as Parse.
        public static List<string> KeyPaths(string text)
        {
            var p = new MiniJson(text) { _keyPaths = new List<string>() };
            p.Value("");
            p.Space();
            if (p._i != p._s.Length) throw p.Error("text after the value");
            return p._keyPaths;
        }

        public static string Write(object value)
        {
            var sb = new StringBuilder();
            Write(sb, value);
            return sb.ToString();
        }

        // `path` is the value's JSON pointer, for KeyPaths.
        private object Value(string path)
        {
            Space();
            if (_i >= _s.Length) throw Error("unexpected end");
            char c = _s[_i];
            if (c == '{') return Object(path);
            if (c == '[') return Array(path);
            if (c == '"') return String();
            if (Literal("true")) return true;
            if (Literal("false")) return false;
            if (Literal("null")) return null;
            return Number();
        }

        private Dictionary<string, object> Object(string path)
        {
            var o = new Dictionary<string, object>();
            _i++;
            Space();
            if (Next('}')) return o;
            do
            {
                Space();
                if (_i >= _s.Length || _s[_i] != '"') throw Error("a key expected");
                string key = String();
                Space();
                if (!Next(':')) throw Error("':' expected");
                if (o.ContainsKey(key)) throw Error("duplicate key " + key);
                string member = path + "/" + key.Replace("~", "~0").Replace("/", "~1");
                if (_keyPaths != null) _keyPaths.Add(member);
                o[key] = Value(member);
                Space();
            } while (Next(','));
            if (!Next('}')) throw Error("'}' expected");
            return o;
        }

        private List<object> Array(string path)
        {
            var a = new List<object>();
            _i++;
            Space();
            if (Next(']')) return a;
            do
            {
                a.Add(Value(path + "/" + a.Count));
                Space();
            } while (Next(','));
            if (!Next(']')) throw Error("']' expected");
            return a;
        }

        private string String()
        {
            var sb = new StringBuilder();
            _i++;
            for (;;)
            {
                if (_i >= _s.Length) throw Error("unterminated string");
                char c = _s[_i++];
                if (c == '"') return sb.ToString();
                if (c < ' ') throw Error("control character in a string");
                if (c != '\\')
                {
                    sb.Append(c);
                    continue;
                }
                if (_i >= _s.Length) throw Error("unterminated escape");
                char e = _s[_i++];
                switch (e)
                {
                    case '"': case '\\': case '/': sb.Append(e); break;
                    case 'b': sb.Append('\b'); break;
                    case 'f': sb.Append('\f'); break;
                    case 'n': sb.Append('\n'); break;
                    case 'r': sb.Append('\r'); break;
                    case 't': sb.Append('\t'); break;
                    case 'u':
                        if (_i + 4 > _s.Length) throw Error("short \\u escape");
                        sb.Append((char)int.Parse(_s.Substring(_i, 4), NumberStyles.HexNumber,
                                                  CultureInfo.InvariantCulture));
                        _i += 4;
                        break;
                    default: throw Error("bad escape \\" + e);
                }
            }
        }

        private object Number()
        {
            int start = _i;
            while (_i < _s.Length && "+-0123456789.eE".IndexOf(_s[_i]) >= 0) _i++;
            string n = _s.Substring(start, _i - start);
            long whole;
            if (long.TryParse(n, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture,
                              out whole))
                return whole;
            double d;
            if (n.Length > 0 && double.TryParse(n, NumberStyles.Float, CultureInfo.InvariantCulture,
                                                out d))
                return d;
            _i = start;
            throw Error("a value expected");
        }

        private bool Literal(string word)
        {
            if (string.CompareOrdinal(_s, _i, word, 0, word.Length) != 0) return false;
            _i += word.Length;
            return true;
        }

        private bool Next(char c)
        {
            if (_i < _s.Length && _s[_i] == c)
            {
                _i++;
                return true;
            }
            return false;
        }

        private void Space()
        {
            while (_i < _s.Length && " \t\r\n".IndexOf(_s[_i]) >= 0) _i++;
        }

        private FormatException Error(string what)
        {
            return new FormatException("JSON: " + what + " at " + _i);
        }

        private static void Write(StringBuilder sb, object value)
        {
            if (value == null) sb.Append("null");
            else if (value is bool) sb.Append((bool)value ? "true" : "false");
            else if (value is long) sb.Append(((long)value).ToString(CultureInfo.InvariantCulture));
            else if (value is double)
                sb.Append(((double)value).ToString("R", CultureInfo.InvariantCulture));
            else if (value is string) WriteString(sb, (string)value);
            else if (value is Dictionary<string, object>)
            {
                sb.Append('{');
                bool first = true;
                foreach (KeyValuePair<string, object> kv in (Dictionary<string, object>)value)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    WriteString(sb, kv.Key);
                    sb.Append(':');
                    Write(sb, kv.Value);
                }
                sb.Append('}');
            }
            else if (value is List<object>)
            {
                sb.Append('[');
                bool first = true;
                foreach (object item in (List<object>)value)
                {
                    if (!first) sb.Append(',');
                    first = false;
                    Write(sb, item);
                }
                sb.Append(']');
            }
            else throw new ArgumentException("not a JSON value: " + value.GetType(), "value");
        }

        private static void WriteString(StringBuilder sb, string s)
        {
            sb.Append('"');
            foreach (char c in s)
            {
                if (c == '"' || c == '\\') sb.Append('\\').Append(c);
                else if (c < ' ') sb.Append("\\u").Append(((int)c).ToString("x4"));
                else sb.Append(c);
            }
            sb.Append('"');
        }
    }
}
