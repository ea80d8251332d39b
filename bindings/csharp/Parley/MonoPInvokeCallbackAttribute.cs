// Ahead-of-time compilers (Unity's IL2CPP, Xamarin iOS) can hand native code only static
// methods marked with an attribute of this name; Mono and .NET ignore it.
using System;

namespace Parley
{
    [AttributeUsage(AttributeTargets.Method)]
    internal sealed class MonoPInvokeCallbackAttribute : Attribute
    {
        public MonoPInvokeCallbackAttribute(Type delegateType) { DelegateType = delegateType; }

        public Type DelegateType { get; private set; }
    }
}
