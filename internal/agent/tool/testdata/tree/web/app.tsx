export const App = () => <div>main</div>;
